import { and, eq, sql } from "drizzle-orm";
import type { z } from "zod";
import { audited, type AuditActor } from "@/lib/audit/record-audit";
import type { Database } from "@/lib/db/client";
import { runs } from "@/lib/db/schema";
import { AppError } from "@/lib/errors";
import { recordPowerEvents } from "@/lib/power/records/power-events";
import { readPowerSettings } from "@/lib/power/config/power-settings-store";
import { POWER_SHUTDOWN, powerShutdownPipeline } from "@/lib/power/shutdown-pipeline/pipeline";
import type { ShutdownInput } from "@/lib/power/shutdown/shutdown-plan";
import { startRun } from "@/lib/runs/start-run";
import { DRILL_TRIGGER, planModeOf, type DrillMark } from "../shutdown/drill-mark";
import { drillPlan } from "./drill-plan";
import { checkLiveConfirmation } from "./live-confirmation";
import { ZStartDrill } from "./schemas";

// The lock arming and disarming take: a live drill's "armed" is the mode stored, not one that
// a disarm is changing under it.
export const sqlModeLock = sql`select pg_advisory_xact_lock(hashtext('clupilot power mode'))`;

export type DrillStarted = { runId: string; live: boolean; ups: string; targets: string[] };

/**
 * Starts a drill: a `power-shutdown` run of one UPS's outage, as if its trigger fired now, marked
 * as a drill by whom (docs/decisions.md, "Drills"). A dry-run drill sends nothing whatever the
 * console's mode. A live drill needs the console armed and the exact list of targets its
 * confirmation showed; anything else changes nothing. Never while another shutdown run is
 * running (a drill must not overlap a real outage). Audited either way.
 */
export async function startDrill(
  db: Database,
  input: z.input<typeof ZStartDrill>,
  actor: AuditActor,
): Promise<DrillStarted> {
  const data = ZStartDrill.parse(input);
  return audited(
    db,
    {
      actor,
      action: "power.drill_start",
      target: (result) => `run:${result.runId}`,
      detail: (result) => ({ upsId: data.upsId, live: data.live, targets: result.targets }),
    },
    async () => {
      const plan = await drillPlan(db, data.upsId);
      return db.transaction(async (tx) => {
        await tx.execute(sqlModeLock);
        const [running] = await tx
          .select({ id: runs.id })
          .from(runs)
          .where(and(eq(runs.pipeline, POWER_SHUTDOWN), eq(runs.status, "running")))
          .limit(1);
        if (running) {
          throw new AppError(
            "conflict",
            `A shutdown run is in progress (run ${running.id}): a drill waits until it has ended. Follow it on the power page.`,
          );
        }
        const names = plan.targets.map((t) => t.name);
        if (plan.targets.length === 0) {
          throw new AppError(
            "conflict",
            `An outage of ${plan.ups.name} shuts nothing down (no enabled target it alone brings down): nothing to drill. Protect targets on the Targets page first.`,
          );
        }
        const { mode } = await readPowerSettings(tx);
        if (data.live) {
          checkLiveConfirmation({
            mode,
            confirmedTargetIds: data.confirmedTargetIds,
            planned: plan.targets,
            whatLiveDoes: "sends real shutdowns",
            changed: (planned) =>
              `The targets changed since the confirmation was shown: a live drill of ${plan.ups.name} now shuts down ${planned.join(", ")}. Review them and confirm again.`,
          });
        }
        const now = new Date().toISOString();
        const drill: DrillMark = { by: actor.name, live: data.live, startedAt: now };
        const runInput: ShutdownInput & { drill: DrillMark } = {
          trigger: {
            upsId: plan.ups.id,
            upsName: plan.ups.name,
            trigger: DRILL_TRIGGER,
            reason: `${data.live ? "live drill" : "drill (dry-run)"} started by ${actor.name}`,
            latchedAt: now,
          },
          // A drill is an outage of its own: its calls never count as this target's call for a
          // real outage, nor the other way round.
          targets: plan.targets.map((t) => ({ targetId: t.id, dueSince: now })),
          mode: planModeOf({ drill }, mode),
          drill,
        };
        const runId = await startRun(tx, {
          pipeline: powerShutdownPipeline,
          hostId: null,
          actor: actor.name,
          context: { input: runInput },
        });
        await recordPowerEvents(tx, [
          {
            severity: data.live ? "warning" : "info",
            kind: "drill.started",
            message: data.live
              ? `live drill of ${plan.ups.name} started by ${actor.name}: these targets really shut down: ${names.join(", ")}`
              : `drill of ${plan.ups.name} started by ${actor.name} in dry-run: nothing is sent (${names.join(", ")})`,
            upsId: plan.ups.id,
            runId,
            data: { live: data.live, targets: plan.targets.map((t) => t.id) },
          },
        ]);
        return { runId, live: data.live, ups: plan.ups.name, targets: names };
      });
    },
  );
}
