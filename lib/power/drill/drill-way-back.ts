import { and, eq } from "drizzle-orm";
import type { z } from "zod";
import { audited, type AuditActor } from "@/lib/audit/record-audit";
import type { Database } from "@/lib/db/client";
import { runs } from "@/lib/db/schema";
import { AppError } from "@/lib/errors";
import { readPowerSettings } from "@/lib/power/config/power-settings-store";
import type { PowerMode } from "@/lib/power/config/settings";
import { buildPowerBackPlan, type PowerBackInput } from "@/lib/power/power-back/back-plan";
import { backPlanView, type BackPlanView } from "@/lib/power/power-back/back-plan-view";
import { POWER_BACK, powerBackPipeline } from "@/lib/power/power-back-pipeline/pipeline";
import { START_LOCK } from "@/lib/power/power-back-pipeline/start-power-back";
import { guestsRecordedBy } from "@/lib/power/records/guests-before";
import { drillOf, planModeOf, type DrillMark } from "@/lib/power/shutdown/drill-mark";
import { runOriginOf } from "@/lib/power/shutdown/run-origin";
import { POWER_SHUTDOWN } from "@/lib/power/shutdown-pipeline/pipeline";
import { startRun } from "@/lib/runs/start-run";
import { checkLiveConfirmation } from "./live-confirmation";
import { ZStartDrillWayBack } from "./schemas";
import { sqlModeLock } from "./start-drill";

type Reader = Pick<Database, "select">;

/**
 * What the way back of one drill would do now — its dialog shows exactly this — or why it
 * cannot start. The plan is buildPowerBackPlan over the drill's own shutdown run and the guests
 * it recorded (the function PlanPowerBack freezes), so a live way back powers on what the drill
 * took down and starts exactly the guests that ran before it, nothing else.
 */
export type DrillWayBack = {
  drill: { runId: string; live: boolean; by: string; upsName: string | null };
  consoleMode: PowerMode;
  /** A live way back can be chosen: a live drill, the console armed. Why not, else. */
  live: { offered: true } | { offered: false; why: string };
  /** Why no way back can start now (the drill still runs, another way back runs…); null: it can. */
  refused: string | null;
  /** The plan, in dry-run mode (what a dry way back records); null when the drill planned nothing. */
  plan: BackPlanView | null;
};

/**
 * The way back of a drill is a `power-back` run like an outage's, marked with a drill mark
 * (`input.drill`): it never closes an outage, never counts as the monitor's "tried", and the
 * monitor's policy never starts one (it only ever looks at outages' shutdown runs).
 *
 * Why after the drill and not "then bring back" on the drill's form: the way back of a live
 * drill powers machines on and starts guests, and its confirmation must name what the drill
 * really took down — which is known only once the drill's shutdown has ended (a target handed
 * back or spared is not powered on). A chained start would confirm a guess.
 */
export async function drillWayBack(db: Reader, runId: string): Promise<DrillWayBack> {
  const drill = await drillRun(db, runId);
  const settings = await readPowerSettings(db);
  const plan = await planOf(db, drill, "dry-run", settings.shutdown.guestParallelism);
  const refused = await refusal(db, drill, plan);
  return {
    drill: { runId, live: drill.mark.live, by: drill.mark.by, upsName: drill.upsName },
    consoleMode: settings.mode,
    live: !drill.mark.live
      ? {
          offered: false,
          why: "This drill ran in dry-run and took nothing down: its way back is rehearsed in dry-run too.",
        }
      : settings.mode !== "armed"
        ? {
            offered: false,
            why: "A live way back powers hosts on and starts guests, which only an armed console does: arm first.",
          }
        : { offered: true },
    refused,
    plan: plan ? await backPlanView(db, plan) : null,
  };
}

export type DrillWayBackStarted = { runId: string; live: boolean; hosts: string[] };

/**
 * Starts the way back of a drill whose shutdown run has ended (admins; audited
 * `power.drill_way_back`). Dry-run: every power-on and start recorded as would-do, nothing sent,
 * whatever the mode. Live: only after a live drill, only while armed, and only with the exact
 * list of hosts its confirmation showed — checked here, under the mode lock, by the same check
 * as a live drill's (./live-confirmation.ts). Never while a shutdown or another way back runs.
 */
export async function startDrillWayBack(
  db: Database,
  input: z.input<typeof ZStartDrillWayBack>,
  actor: AuditActor,
): Promise<DrillWayBackStarted> {
  const data = ZStartDrillWayBack.parse(input);
  return audited(
    db,
    {
      actor,
      action: "power.drill_way_back",
      target: (result) => `run:${result.runId}`,
      detail: (result) => ({ drillRunId: data.runId, live: data.live, hosts: result.hosts }),
    },
    () =>
      db.transaction(async (tx) => {
        await tx.execute(sqlModeLock);
        await tx.execute(START_LOCK);
        const drill = await drillRun(tx, data.runId);
        const settings = await readPowerSettings(tx);
        const mark: DrillMark = {
          by: actor.name,
          live: data.live,
          startedAt: new Date().toISOString(),
        };
        const mode = planModeOf({ drill: mark }, settings.mode);
        const plan = await planOf(tx, drill, mode, settings.shutdown.guestParallelism);
        const refused = await refusal(tx, drill, plan);
        if (refused) throw new AppError("conflict", refused);
        const hosts = plan!.hosts.map((h) => ({ id: h.targetId, name: h.name }));
        if (data.live) {
          if (!drill.mark.live) {
            throw new AppError(
              "conflict",
              "This drill ran in dry-run and took nothing down: its way back is rehearsed in dry-run too (live: false).",
              { live: ["Only a live drill's way back can be live."] },
            );
          }
          checkLiveConfirmation({
            mode: settings.mode,
            confirmedTargetIds: data.confirmedTargetIds,
            planned: hosts,
            whatLiveDoes: "way back powers hosts on and starts guests",
            changed: (names) =>
              `The hosts changed since the confirmation was shown: the way back of this drill now powers on ${names.join(", ")}. Review them and confirm again.`,
          });
        }
        const runInput: PowerBackInput = {
          by: { kind: "admin", name: actor.name },
          shutdownRunIds: [drill.id],
          drill: mark,
        };
        const runId = await startRun(tx, {
          pipeline: powerBackPipeline,
          hostId: null,
          actor: actor.name,
          context: { input: runInput },
        });
        return { runId, live: data.live, hosts: hosts.map((h) => h.name) };
      }),
  );
}

type DrillRun = {
  id: string;
  status: "running" | "succeeded" | "failed";
  context: Record<string, unknown>;
  mark: DrillMark;
  upsName: string | null;
};

async function drillRun(db: Reader, runId: string): Promise<DrillRun> {
  const [row] = await db
    .select({ id: runs.id, status: runs.status, context: runs.context })
    .from(runs)
    .where(and(eq(runs.id, runId), eq(runs.pipeline, POWER_SHUTDOWN)));
  const mark = row ? drillOf(row.context.input) : null;
  if (!row || !mark) {
    throw new AppError(
      "not_found",
      "No drill has this run id: a way back is started from a drill's own timeline under Runs and drills.",
    );
  }
  const origin = runOriginOf(row.context);
  return { ...row, mark, upsName: origin.kind === "drill" ? origin.upsName : null };
}

async function planOf(db: Reader, drill: DrillRun, mode: PowerMode, guestParallelism: number) {
  if (!drill.context.plan) return null;
  return buildPowerBackPlan({
    runs: [{ id: drill.id, context: drill.context }],
    guests: await guestsRecordedBy(db, [drill.id]),
    mode,
    guestParallelism,
    now: new Date(),
  });
}

/** Why no way back of this drill can start now, or null. */
async function refusal(
  db: Reader,
  drill: DrillRun,
  plan: Awaited<ReturnType<typeof planOf>>,
): Promise<string | null> {
  if (drill.status === "running")
    return "The drill's shutdown is still running: its way back starts once it has ended.";
  if (!plan) return "The drill ended before it planned anything: there is nothing to bring back.";
  if (plan.hosts.length === 0)
    return "Every target of the drill was spared or handed back: nothing went down, nothing to bring back.";
  const running = await db
    .select({ id: runs.id, pipeline: runs.pipeline })
    .from(runs)
    .where(eq(runs.status, "running"))
    .orderBy(runs.createdAt, runs.id);
  const back = running.find((r) => r.pipeline === POWER_BACK);
  if (back)
    return `A way back is running (run ${back.id}): one at a time — follow it under Runs and drills.`;
  const shutdown = running.find((r) => r.pipeline === POWER_SHUTDOWN);
  if (shutdown)
    return `A shutdown run is in progress (run ${shutdown.id}): a drill's way back waits until it has ended.`;
  return null;
}
