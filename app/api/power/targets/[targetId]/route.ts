import { z } from "zod";
import { respondToGuardedChange } from "@/lib/api/plan-guarded-response";
import { route } from "@/lib/api/route";
import { deletePowerTarget, updatePowerTarget } from "@/lib/power/operations/power-targets";
import {
  withPlanChangeConfirmation,
  ZPlanChangeConfirmation,
} from "@/lib/power/queries/plan-change";
import { ZUpdatePowerTarget } from "@/lib/power/config/schemas";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

const params = { targetId: z.uuid({ error: "Not a target id." }) };

/**
 * Changes a target's protection (admins): `feeds` (UPS ids), `feedPolicy` (`all` | `any`),
 * `stage`, `runsConsole`, `enabled`; for a backup server also `name`, `address`, `port`,
 * `tokenId`, `tokenSecret` (left out: the stored one stays), `certSha256`.
 * → `{ target, planChange }`.
 */
export const PATCH = route(
  "PATCH /api/power/targets/[targetId]",
  {
    role: "admin",
    summary: "Change a target's protection",
    params,
    body: {
      schema: withPlanChangeConfirmation(ZUpdatePowerTarget),
      fromPath: { targetId: "id" },
    },
  },
  async ({ actor, body: { confirmPlanChange, ...input } }) =>
    respondToGuardedChange(
      confirmPlanChange,
      (db) => updatePowerTarget(db, input, actor),
      (target) => ({ target }),
    ),
);

/** Stops protecting a target (admins); its host stays. → `{ deleted, planChange }`. */
export const DELETE = route(
  "DELETE /api/power/targets/[targetId]",
  {
    role: "admin",
    summary: "Stop protecting a target (its host stays)",
    params,
    query: { schema: ZPlanChangeConfirmation },
    errorKeys: "field",
  },
  async ({ actor, params: { targetId: id }, query: { confirmPlanChange } }) =>
    respondToGuardedChange(
      confirmPlanChange,
      (db) => deletePowerTarget(db, { id }, actor),
      () => ({ deleted: id }),
    ),
);
