"use server";

import { withPlanChangeConfirmation } from "@/lib/power/queries/plan-change";
import { ZPowerSettingsChange } from "@/lib/power/queries/settings-change";
import { updatePowerSettings } from "@/lib/power/operations/update-power-settings";
import { formAction } from "../action";
import { powerForm, runConfigChange } from "./config-change";

/**
 * Changes the global trigger defaults, the poll interval or the shutdown deadlines. Admins only;
 * audited. While armed, a change to the plan is saved only once confirmed (`confirmPlanChange`);
 * until then the result shows what it changes.
 */
export const updatePowerSettingsAction = formAction(
  {
    name: "update power settings",
    role: "admin",
    schema: withPlanChangeConfirmation(ZPowerSettingsChange),
    input: powerForm({
      blank: "null",
      extra: (input) => ({ ...consoleGuestOfForm(input), ...shedGuestsOfForm(input) }),
    }),
    errorKeys: "path",
    revalidate: [["/power", "layout"]],
  },
  async ({ actor, input: { confirmPlanChange, ...input } }) =>
    runConfigChange(confirmPlanChange, (db) => updatePowerSettings(db, input, actor)),
);

/**
 * The form's shed list, one text field `node/VMID, node/VMID`: turned into entries the schema
 * checks one by one. Anything that is not that shape is left as text, for the schema to refuse
 * under the field (never guessed into a guest).
 */
function shedGuestsOfForm(input: Record<string, unknown>): Record<string, unknown> {
  const shed = input.shed as Record<string, unknown> | undefined;
  const text = shed?.guests;
  // The field emptied: no guest is shed by the list (the tag still marks guests).
  if (text === null) return { shed: { ...shed, guests: [] } };
  if (typeof text !== "string") return {};
  const items = text.split(/[\s,;]+/).filter((s) => s.length > 0);
  const entries = items.map((item) => /^([^/]+)\/(\d{1,12})$/.exec(item));
  if (entries.some((e) => e === null)) return {};
  return {
    shed: { ...shed, guests: entries.map((e) => ({ node: e![1], vmid: Number(e![2]) })) },
  };
}

/**
 * The form's two console-guest fields: both empty is "the console runs in no guest" (null);
 * one of them empty is left for the schema to refuse under that field.
 */
function consoleGuestOfForm(input: Record<string, unknown>): Record<string, unknown> {
  const shutdown = input.shutdown as Record<string, unknown> | undefined;
  const guest = shutdown?.consoleGuest as { node?: unknown; vmid?: unknown } | undefined;
  if (!guest || guest.node !== null || guest.vmid !== null) return {};
  return { shutdown: { ...shutdown, consoleGuest: null } };
}
