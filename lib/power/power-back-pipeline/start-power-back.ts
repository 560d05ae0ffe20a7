import { and, asc, desc, eq, gt, sql } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { runs } from "@/lib/db/schema";
import { startRun } from "@/lib/runs/start-run";
import type { ShutdownPlan } from "@/lib/power/shutdown/shutdown-plan";
import { isDrill } from "@/lib/power/shutdown/drill-mark";
import { POWER_SHUTDOWN } from "@/lib/power/shutdown-pipeline/pipeline";
import { shedRunsForWayBack } from "@/lib/power/shed-pipeline/start-shed";
import type { PowerBackInput } from "../power-back/back-plan";
import { POWER_BACK, powerBackPipeline } from "./pipeline";

/**
 * An outage older than this is not brought back — not by the monitor, not by Bring back now:
 * what ran a week ago says little about what should run now, and a console upgraded or left
 * with an old outage open must not start last month's guests.
 */
export const OUTAGE_MAX_AGE_MS = 7 * 24 * 3600 * 1000;

/** One start at a time across web and worker processes: the checks and the insert in one lock. */
export const START_LOCK = sql`select pg_advisory_xact_lock(hashtext('clupilot power-back start'))`;

type Reader = Pick<Database, "select">;

/**
 * A power-back run that is an outage's way back, not a drill's (whose input carries `drill`): a
 * drill's way back never closes an outage nor counts as "tried" for the monitor's policy.
 */
const NOT_A_DRILL = sql`(${runs.context} -> 'input' -> 'drill') is null`;

/** The outage the way back would undo now, as its shutdown runs say it. */
export type OutageToBringBack = {
  /** Its shutdown runs, oldest first: every one since the last way back that succeeded. */
  shutdownRunIds: string[];
  /** Its early-shedding runs whose guests were not started again by their own restart. */
  shedRunIds: string[];
  /** Every UPS feeding the hosts they shut down. */
  feeds: string[];
  /** The largest shutdown budget among them (a second outage needs that much runtime). */
  budgetSeconds: number;
  /** A shutdown run of it is still going: not over yet. */
  shutdownRunning: boolean;
  /** When its latest shutdown run started. */
  latestShutdownAt: Date;
  /** A way back (any outcome) started after its latest shutdown run: tried for this outage. */
  tried: boolean;
};

/**
 * The shutdown runs since the last power-back run that succeeded and within OUTAGE_MAX_AGE_MS of
 * `now` — drills and runs cancelled before anything was sent left out (they took nothing down),
 * and so are drills' ways back (they answer the drill, not the outage).
 * A way back stopped by a new outage leaves its outage open: the next one covers both. Null
 * when there is none.
 */
export async function outageToBringBack(db: Reader, now: Date): Promise<OutageToBringBack | null> {
  const [lastBack] = await db
    .select({ createdAt: runs.createdAt })
    .from(runs)
    .where(and(eq(runs.pipeline, POWER_BACK), eq(runs.status, "succeeded"), NOT_A_DRILL))
    .orderBy(desc(runs.createdAt), desc(runs.id))
    .limit(1);
  const rows = await db
    .select({ id: runs.id, status: runs.status, context: runs.context, createdAt: runs.createdAt })
    .from(runs)
    .where(
      and(
        eq(runs.pipeline, POWER_SHUTDOWN),
        gt(runs.createdAt, new Date(now.getTime() - OUTAGE_MAX_AGE_MS)),
        lastBack ? gt(runs.createdAt, lastBack.createdAt) : undefined,
      ),
    )
    .orderBy(asc(runs.createdAt), asc(runs.id));
  const outage = rows.filter(
    (r) => !isDrill(r.context.input) && r.context.outcome !== "cancelled" && r.context.plan,
  );
  if (outage.length === 0) return null;
  const plans = outage.map((r) => r.context.plan as ShutdownPlan);
  const latestShutdownAt = outage.at(-1)!.createdAt;
  const [latestBack] = await db
    .select({ createdAt: runs.createdAt })
    .from(runs)
    .where(and(eq(runs.pipeline, POWER_BACK), NOT_A_DRILL))
    .orderBy(desc(runs.createdAt), desc(runs.id))
    .limit(1);
  return {
    shutdownRunIds: outage.map((r) => r.id),
    shedRunIds: await shedRunsForWayBack(db, lastBack?.createdAt ?? null, now),
    feeds: [
      ...new Set(plans.flatMap((p) => p.targets.flatMap((t) => t.feeds.map((f) => f.upsId)))),
    ],
    budgetSeconds: Math.max(0, ...plans.map((p) => p.budgetSeconds)),
    shutdownRunning: outage.some((r) => r.status === "running"),
    latestShutdownAt,
    tried: latestBack !== undefined && latestBack.createdAt > latestShutdownAt,
  };
}

/** The running power-back runs, oldest first. */
export function runningPowerBackRuns(
  db: Reader,
): Promise<{ id: string; context: Record<string, unknown> }[]> {
  return db
    .select({ id: runs.id, context: runs.context })
    .from(runs)
    .where(and(eq(runs.pipeline, POWER_BACK), eq(runs.status, "running")))
    .orderBy(asc(runs.createdAt), asc(runs.id));
}

export type PowerBackStart = { runId: string } | { refused: string };

/**
 * Starts a power-back run for the open outage, in the caller's transaction — or says why not:
 * one is running already, no outage is open, its shutdown is still going, or (started by the
 * monitor) a way back was already tried for this outage: the monitor starts one per outage,
 * never a loop of them; an admin may always try again.
 */
export async function startPowerBackRun(
  tx: Pick<Database, "select" | "insert" | "execute">,
  by: PowerBackInput["by"],
): Promise<PowerBackStart> {
  await tx.execute(START_LOCK);
  if ((await runningPowerBackRuns(tx)).length > 0) {
    return { refused: "A power-back run is already running: follow it on /power/runs." };
  }
  const outage = await outageToBringBack(tx, new Date());
  if (!outage)
    return {
      refused:
        "No outage to come back from: no shutdown run since the last way back (within the last 7 days).",
    };
  if (outage.shutdownRunning) {
    return {
      refused: "The outage's shutdown run is still going: the way back starts once it has ended.",
    };
  }
  if (by.kind === "monitor" && outage.tried) {
    return {
      refused: "A way back was already tried for this outage: an admin brings it back now.",
    };
  }
  const input: PowerBackInput = {
    by,
    shutdownRunIds: outage.shutdownRunIds,
    shedRunIds: outage.shedRunIds,
  };
  const runId = await startRun(tx, {
    pipeline: powerBackPipeline,
    hostId: null,
    actor: by.kind === "admin" ? by.name : "power monitor",
    context: { input },
  });
  return { runId };
}
