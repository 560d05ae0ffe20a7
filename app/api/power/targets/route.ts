import { respondToGuardedChange } from "@/lib/api/plan-guarded-response";
import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { createPowerTarget } from "@/lib/power/operations/power-targets";
import { withPlanChangeConfirmation } from "@/lib/power/queries/plan-change";
import { listTargetProtection } from "@/lib/power/queries/target-protection";
import { ZCreatePowerTarget } from "@/lib/power/config/schemas";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Every protected target with its protection: `{ targets: [{ id, kind, name, endpoint, feeds,
 * feedPolicy, stage, runsConsole, enabled, token: { answer, reason, asOf } }] }`.
 */
export const GET = route(
  "GET /api/power/targets",
  { role: "viewer", summary: "Every protected target with its protection" },
  async () => json({ targets: await listTargetProtection(getDb()) }),
);

/**
 * Protects a target (admins): an onboarded host `{ kind: "pve-node", hostId, feeds, feedPolicy,
 * stage?, runsConsole? }`, or a backup server `{ kind: "pbs", name, address, port?, tokenId,
 * tokenSecret, certSha256, feeds, feedPolicy, stage?, runsConsole? }` → 201 `{ target,
 * planChange }`. The token's secret is sealed and never answered back.
 */
export const POST = route(
  "POST /api/power/targets",
  {
    role: "admin",
    summary: "Protect an onboarded host or a backup server",
    body: { schema: withPlanChangeConfirmation(ZCreatePowerTarget) },
  },
  async ({ actor, body: { confirmPlanChange, ...input } }) =>
    respondToGuardedChange(
      confirmPlanChange,
      (db) => createPowerTarget(db, input, actor),
      (target) => ({ target }),
      201,
    ),
);
