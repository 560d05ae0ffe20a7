import { sql } from "drizzle-orm";
import type { z } from "zod";
import { audited, type AuditActor } from "@/lib/audit/record-audit";
import type { Database } from "@/lib/db/client";
import { AppError } from "@/lib/errors";
import { recordPowerEvents } from "../records/power-events";
import { planSnapshot } from "../shutdown-pipeline/plan-preview";
import { writePowerSettings } from "../config/power-settings-store";
import { ZSetPowerMode } from "../config/schemas";
import { queueSelfTest } from "../self-test/queue-self-test";
import { loadTargets } from "../targets/load-targets";

const sqlLock = sql`select pg_advisory_xact_lock(hashtext('clupilot power mode'))`;

export type PowerModeResult = { mode: "dry-run" | "armed"; targets: string[] };

/**
 * Arms or disarms. Arming names the targets the admin's confirmation listed; if the plan is no
 * longer exactly those, nothing changes and the admin is asked to look again. Audited either way.
 */
export async function setPowerMode(
  db: Database,
  input: z.input<typeof ZSetPowerMode>,
  actor: AuditActor,
): Promise<PowerModeResult> {
  const data = ZSetPowerMode.parse(input);
  return audited(
    db,
    {
      actor,
      action: data.mode === "armed" ? "power.arm" : "power.disarm",
      target: null,
      detail: (result) => ({ targets: result.targets }),
    },
    () =>
      db.transaction(async (tx) => {
        // One arming or disarming at a time: the plan checked is the plan stored.
        await tx.execute(sqlLock);
        const snapshot = planSnapshot(await loadTargets(tx));
        const names = snapshot.targets.map((t) => t.name);
        if (data.mode === "armed") {
          const now = new Set(snapshot.targets.map((t) => t.id));
          const confirmed = new Set(data.confirmedTargetIds);
          if (now.size !== confirmed.size || [...now].some((id) => !confirmed.has(id))) {
            throw new AppError(
              "conflict",
              `The plan changed since the confirmation was shown: it now shuts down ${names.join(", ") || "nothing"}. Review it and confirm again.`,
            );
          }
          await writePowerSettings(tx, {
            mode: "armed",
            armedAt: new Date(),
            armedBy: actor.name,
            armedPlan: snapshot,
          });
          // The path just armed is proven at once, not at the next hourly run.
          await queueSelfTest(tx, "armed", actor.name);
          await recordPowerEvents(tx, [
            {
              severity: "warning",
              kind: "mode.armed",
              message: `armed by ${actor.name}: from now on shutdowns are sent for real (${names.join(", ") || "no target yet"})`,
              data: { targets: snapshot.targets.map((t) => t.id) },
            },
          ]);
        } else {
          await writePowerSettings(tx, {
            mode: "dry-run",
            armedAt: null,
            armedBy: null,
            armedPlan: null,
          });
          await recordPowerEvents(tx, [
            {
              severity: "warning",
              kind: "mode.disarmed",
              message: `disarmed by ${actor.name}: dry-run, nothing is sent`,
            },
          ]);
        }
        return { mode: data.mode, targets: names };
      }),
  );
}
