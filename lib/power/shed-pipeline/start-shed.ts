import { and, asc, desc, eq, gt, sql } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { runs } from "@/lib/db/schema";
import { startRun } from "@/lib/runs/start-run";
import type { ShedPlan, ShedInput } from "@/lib/power/shed/shed-plan";
import type { ShedDue } from "@/lib/power/shed/shed-selection";
import type { ShedBackInput } from "@/lib/power/shed/plan-shed-back";
import type { ShedState } from "@/lib/power/shed/stop-shed-guests";
import { isDrill } from "@/lib/power/shutdown/drill-mark";
import { POWER_SHUTDOWN } from "@/lib/power/shutdown-pipeline/pipeline";
import { POWER_SHED, POWER_SHED_BACK, powerShedBackPipeline, powerShedPipeline } from "./pipeline";

/** A shed older than this is not undone any more (as an outage: lib/power/power-back-pipeline). */
export const SHED_MAX_AGE_MS = 7 * 24 * 3600 * 1000;

/** One start at a time across worker processes: the checks and the insert in one lock. */
const START_LOCK = sql`select pg_advisory_xact_lock(hashtext('clupilot power-shed start'))`;

type Reader = Pick<Database, "select">;

type ShedRunRow = {
  id: string;
  status: string;
  createdAt: Date;
  context: Record<string, unknown>;
};

function shedRunsSince(db: Reader, since: Date): Promise<ShedRunRow[]> {
  return db
    .select({ id: runs.id, status: runs.status, createdAt: runs.createdAt, context: runs.context })
    .from(runs)
    .where(and(eq(runs.pipeline, POWER_SHED), gt(runs.createdAt, since)))
    .orderBy(asc(runs.createdAt), asc(runs.id));
}

/**
 * Starts one shed run for the due targets whose outage was not shed yet — exactly once per
 * outage: a target is left out when a shed run (any outcome) already names one of its feeds'
 * outages (`upsId@onBatterySince`). In the caller's transaction; null when nothing is new.
 */
export async function startShedRun(
  tx: Pick<Database, "select" | "insert" | "execute">,
  due: readonly ShedDue[],
  now: Date,
): Promise<{ runId: string; input: ShedInput } | null> {
  await tx.execute(START_LOCK);
  const shed = new Set(
    (await shedRunsSince(tx, new Date(now.getTime() - SHED_MAX_AGE_MS))).flatMap(
      (r) => (r.context.input as ShedInput | undefined)?.outages ?? [],
    ),
  );
  const fresh = due.filter((d) => !d.outages.some((o) => shed.has(o)));
  if (fresh.length === 0) return null;
  const outages = [...new Set(fresh.flatMap((d) => d.outages))];
  const since = outages.map((o) => o.slice(o.indexOf("@") + 1)).sort()[0]!;
  const input: ShedInput = {
    why: [...new Set(fresh.map((d) => d.why))].join("; "),
    outages,
    targetIds: fresh.map((d) => d.targetId),
    dueSince: since,
  };
  const runId = await startRun(tx, {
    pipeline: powerShedPipeline,
    hostId: null,
    actor: "power monitor",
    context: { input },
  });
  return { runId, input };
}

/** The guests a shed run shut down (or would have, in dry-run). */
export function shedGuestIds(context: Record<string, unknown>): number[] {
  const state = (context["shed:guests"] as ShedState | undefined) ?? {};
  return Object.values(state)
    .flatMap((g) => Object.values(g.guests))
    .filter((w) => w.outcome === "stopped" || w.outcome === "would")
    .map((w) => w.vmid);
}

/** A shed whose guests the monitor may start again once its feeds are back. */
export type ShedToUndo = { id: string; feeds: string[]; guests: number[] };

/**
 * The ended shed runs of the last SHED_MAX_AGE_MS that shed something and whose guests were not
 * started again yet (no power-shed-back run for it) — and whose outage the main trigger did not
 * take over: a shutdown run (not a drill, not cancelled before it sent anything) since the shed
 * hands them to the way back, which starts them with everything else.
 */
export async function shedsToUndo(db: Reader, now: Date): Promise<ShedToUndo[]> {
  const since = new Date(now.getTime() - SHED_MAX_AGE_MS);
  const sheds = (await shedRunsSince(db, since)).filter(
    (r) => r.status !== "running" && shedGuestIds(r.context).length > 0,
  );
  if (sheds.length === 0) return [];
  const undone = new Set(
    (
      await db
        .select({ context: runs.context })
        .from(runs)
        .where(and(eq(runs.pipeline, POWER_SHED_BACK), gt(runs.createdAt, since)))
    ).map((r) => (r.context.input as ShedBackInput | undefined)?.shedRunId),
  );
  const shutdowns = (
    await db
      .select({ createdAt: runs.createdAt, context: runs.context })
      .from(runs)
      .where(and(eq(runs.pipeline, POWER_SHUTDOWN), gt(runs.createdAt, since)))
      .orderBy(desc(runs.createdAt))
  ).filter((r) => !isDrill(r.context.input) && r.context.outcome !== "cancelled");
  return sheds
    .filter((r) => !undone.has(r.id))
    .filter((r) => !shutdowns.some((s) => s.createdAt >= r.createdAt))
    .map((r) => ({
      id: r.id,
      feeds: (r.context.plan as ShedPlan | undefined)?.feeds ?? [],
      guests: shedGuestIds(r.context),
    }));
}

/** Starts the restart of one shed's guests, once: null when one was started already. */
export async function startShedBackRun(
  tx: Pick<Database, "select" | "insert" | "execute">,
  input: ShedBackInput,
  now: Date,
): Promise<string | null> {
  await tx.execute(START_LOCK);
  if (!(await shedsToUndo(tx, now)).some((s) => s.id === input.shedRunId)) return null;
  return startRun(tx, {
    pipeline: powerShedBackPipeline,
    hostId: null,
    actor: "power monitor",
    context: { input },
  });
}

/**
 * The shed runs whose guests the way back of an outage starts too: those since `after` (the
 * last way back that succeeded) and within SHED_MAX_AGE_MS, not started again by their own
 * restart that succeeded. Oldest first.
 */
export async function shedRunsForWayBack(
  db: Reader,
  after: Date | null,
  now: Date,
): Promise<string[]> {
  const since = new Date(Math.max(now.getTime() - SHED_MAX_AGE_MS, after?.getTime() ?? 0));
  const sheds = (await shedRunsSince(db, since)).filter((r) => shedGuestIds(r.context).length > 0);
  if (sheds.length === 0) return [];
  const restarted = new Set(
    (
      await db
        .select({ context: runs.context })
        .from(runs)
        .where(
          and(
            eq(runs.pipeline, POWER_SHED_BACK),
            eq(runs.status, "succeeded"),
            gt(runs.createdAt, since),
          ),
        )
    ).map((r) => (r.context.input as ShedBackInput | undefined)?.shedRunId),
  );
  return sheds.filter((r) => !restarted.has(r.id)).map((r) => r.id);
}
