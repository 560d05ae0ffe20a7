"use server";

import { z } from "zod";
import { powerOnProtectedHost } from "@/lib/power/operations/power-on-protected-host";
import { getDb } from "@/lib/db/client";
import { askHostForBmc } from "@/lib/hosts/ask-host-for-bmc";
import { ZHostId } from "@/lib/hosts/schemas";
import { hostPowerController } from "@/lib/power-controllers/read-state";
import { ZPowerControllerInput } from "@/lib/power-controllers/schemas";
import {
  auditedPowerControllerDeletion,
  auditedPowerControllerSet,
} from "@/lib/power-controllers/store";
import { action } from "./action";

/**
 * The host page's power controller panel: an admin sets or removes the controller (audited,
 * the password sealed and never sent back); anyone who sees the host may ask its power state.
 */
export const setPowerControllerAction = action(
  {
    name: "set power controller",
    role: "admin",
    schema: z.object({ hostId: ZHostId }).and(ZPowerControllerInput),
    revalidate: [["/hosts", "layout"]],
  },
  async ({ actor, input: { hostId, ...controller } }) => ({
    controller: await auditedPowerControllerSet(getDb(), actor, { hostId, controller }),
  }),
);

export const deletePowerControllerAction = action(
  {
    name: "remove power controller",
    role: "admin",
    schema: z.object({ hostId: ZHostId }),
    revalidate: [["/hosts", "layout"]],
  },
  async ({ actor, input: { hostId } }) => auditedPowerControllerDeletion(getDb(), actor, hostId),
);

export const readPowerStateAction = action(
  { name: "read power state", role: "viewer", schema: z.object({ hostId: ZHostId }) },
  async ({ input: { hostId } }) => hostPowerController(getDb(), hostId, { read: true }),
);

/** "Power on" on the host page: an operator's, confirmed in a dialog, audited as `host.power_on`. */
export const powerOnHostAction = action(
  { name: "power on", role: "operator", schema: z.object({ hostId: ZHostId }) },
  async ({ actor, input: { hostId } }) => ({
    outcome: await powerOnProtectedHost(getDb(), actor, hostId),
  }),
);

/** "Ask the host": what the host's own BMC reports, to fill the form with (nothing is set). */
export const askHostForBmcAction = action(
  { name: "ask host for its BMC", role: "admin", schema: z.object({ hostId: ZHostId }) },
  async ({ input: { hostId } }) => ({ report: await askHostForBmc(getDb(), hostId) }),
);
