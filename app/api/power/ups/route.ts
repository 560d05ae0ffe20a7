import { respondToGuardedChange } from "@/lib/api/plan-guarded-response";
import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { withPlanChangeConfirmation } from "@/lib/power/queries/plan-change";
import { ZCreateUpsDevice } from "@/lib/power/config/schemas";
import { createUpsDevice, listUpsDevices } from "@/lib/power/operations/ups-devices";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Every UPS the console watches, with its source settings: `{ ups: [{ id, name, source,
 * sourceLabel, hasSecret, triggerOverrides }] }`. Secrets never: only whether one is stored.
 */
export const GET = route(
  "GET /api/power/ups",
  { role: "viewer", summary: "Every UPS the console watches" },
  async () => json({ ups: await listUpsDevices(getDb()) }),
);

/**
 * Adds a UPS (admins): `{ name, source: { type: "nut", host, port, upsName, username?,
 * password? } | { type: "snmp", version, host, port, community | user, authProtocol, authKey,
 * privProtocol, privKey }, triggerOverrides?, outputCycle? }` → 201 `{ ups, planChange }`. The
 * secrets are sealed and never answered back. `outputCycle` (boolean, default false): cycle the
 * UPS's output after a shutdown that saw every host on it down (docs/power.md).
 */
export const POST = route(
  "POST /api/power/ups",
  {
    role: "admin",
    summary: "Add a UPS to watch",
    body: { schema: withPlanChangeConfirmation(ZCreateUpsDevice) },
  },
  async ({ actor, body: { confirmPlanChange, ...input } }) =>
    respondToGuardedChange(
      confirmPlanChange,
      (db) => createUpsDevice(db, input, actor),
      (ups) => ({ ups }),
      201,
    ),
);
