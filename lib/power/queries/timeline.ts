import { and, desc, eq, inArray, lt, sql } from "drizzle-orm";
import { z } from "zod";
import type { Database } from "@/lib/db/client";
import { powerRunActions, runs } from "@/lib/db/schema";
import { actionsOfRun, CLUSTER_LANE, type ActionOutcome } from "@/lib/power/records/run-actions";
import { runOriginOf, type RunOrigin } from "@/lib/power/shutdown/run-origin";
import { POWER_BACK } from "@/lib/power/power-back-pipeline/pipeline";
import { POWER_SHUTDOWN } from "@/lib/power/shutdown-pipeline/pipeline";
import { POWER_SHED, POWER_SHED_BACK } from "@/lib/power/shed-pipeline/pipeline";
import { shedOriginOf, shedRunVerdict, type ShedOrigin } from "./shed-view";
import { loadPowerBackFacts } from "./power-back-run";
import { describePowerBack, powerBackOriginOf, type PowerBackOrigin } from "./power-back-verdict";
import { loadPowerRunFacts } from "./power-run-facts";
import { describePowerRun, type PowerRunVerdict } from "./power-run-verdict";

export type TimelineAction = {
  id: number;
  lane: string;
  label: string;
  startedAt: string;
  /** null while the action is in flight (or its worker died mid-call). */
  finishedAt: string | null;
  outcome: ActionOutcome | null;
  detail: string | null;
  /** The exact request, secrets masked. */
  request: string | null;
};

type RunFacts = {
  id: string;
  /** A shutdown (an outage's or a drill's) or a way back after one. */
  kind: PowerRunKind;
  status: "running" | "succeeded" | "failed";
  phase: string | null;
  failureReason: string | null;
  createdAt: string;
  finishedAt: string | null;
  origin: RunOrigin | PowerBackOrigin | ShedOrigin;
  /** What the run did, in one line (./power-run-verdict.ts, ./power-back-verdict.ts). */
  verdict: PowerRunVerdict;
};

/** One power run's timeline: its lanes ("cluster" first, then the nodes) and every action. */
export type RunTimeline = {
  run: RunFacts;
  lanes: string[];
  actions: TimelineAction[];
  /** The console's clock when this was read: an open bar grows from here, not the browser's. */
  serverTime: string;
};

export type PowerRunSummary = RunFacts & {
  actionCount: number;
  outcomes: Partial<Record<ActionOutcome | "open", number>>;
};

export type PowerRunKind = "shutdown" | "way-back" | "shed" | "shed-back";

/** The power pipelines whose runs the list and the timeline show. */
const POWER_PIPELINES = [POWER_SHUTDOWN, POWER_BACK, POWER_SHED, POWER_SHED_BACK];

/** A shed's lanes: the nodes it shed on. */
const ZShedLanes = z.object({ groups: z.array(z.object({ nodes: z.array(z.string()) })) });

/** The nodes a run planned, in order, from its frozen plan; none when the plan is not there. */
const ZPlannedLanes = z.object({ targets: z.array(z.object({ name: z.string() })) });
/** A way back's lanes: its hosts in power-on order, by the node name its actions use. */
const ZBackLanes = z.object({
  hosts: z.array(
    z.object({ name: z.string(), endpoint: z.object({ nodeName: z.string() }).nullish() }),
  ),
});

function plannedLanes(row: typeof runs.$inferSelect): string[] {
  if (row.pipeline === POWER_SHED) {
    const plan = ZShedLanes.safeParse(row.context.plan);
    return plan.success ? plan.data.groups.flatMap((g) => g.nodes) : [];
  }
  if (row.pipeline === POWER_BACK || row.pipeline === POWER_SHED_BACK) {
    const plan = ZBackLanes.safeParse(row.context.plan);
    return plan.success ? plan.data.hosts.map((h) => h.endpoint?.nodeName ?? h.name) : [];
  }
  const plan = ZPlannedLanes.safeParse(row.context.plan);
  return plan.success ? plan.data.targets.map((t) => t.name) : [];
}

/** The verdicts of these power runs, shutdowns and ways back alike, by run id. */
async function verdicts(
  db: Database,
  rows: readonly (typeof runs.$inferSelect)[],
): Promise<Map<string, PowerRunVerdict>> {
  const shutdowns = rows.filter((r) => r.pipeline === POWER_SHUTDOWN);
  const backs = rows.filter((r) => r.pipeline === POWER_BACK);
  const sheds = rows.filter((r) => r.pipeline === POWER_SHED || r.pipeline === POWER_SHED_BACK);
  const [shutdownFacts, backFacts] = await Promise.all([
    loadPowerRunFacts(db, shutdowns),
    loadPowerBackFacts(db, backs),
  ]);
  return new Map([
    ...shutdowns.map((r) => [r.id, describePowerRun(shutdownFacts.get(r.id)!)] as const),
    ...backs.map((r) => [r.id, describePowerBack(backFacts.get(r.id)!)] as const),
    ...sheds.map((r) => [r.id, shedRunVerdict(r.pipeline, r)] as const),
  ]);
}

function runFacts(row: typeof runs.$inferSelect, verdict: PowerRunVerdict): RunFacts {
  const back = row.pipeline === POWER_BACK;
  const shed = row.pipeline === POWER_SHED || row.pipeline === POWER_SHED_BACK;
  return {
    verdict,
    id: row.id,
    kind: shed
      ? row.pipeline === POWER_SHED
        ? "shed"
        : "shed-back"
      : back
        ? "way-back"
        : "shutdown",
    status: row.status,
    phase: row.phase,
    failureReason: row.failureReason,
    createdAt: row.createdAt.toISOString(),
    finishedAt: row.finishedAt?.toISOString() ?? null,
    origin: shed
      ? shedOriginOf(row.pipeline, row.context)
      : back
        ? powerBackOriginOf(row.context)
        : runOriginOf(row.context),
  };
}

/**
 * The cluster lane on top (HA, guests and Ceph act on the whole cluster), then one lane per node
 * in the order the plan put them, then any other lane in the order its first action started —
 * so the lanes are there before their first bar and a node keeps its row as the run goes on.
 */
export function laneOrder(
  planned: readonly string[],
  actions: readonly { lane: string }[],
): string[] {
  const lanes = new Set<string>();
  if (actions.some((a) => a.lane === CLUSTER_LANE)) lanes.add(CLUSTER_LANE);
  for (const name of planned) lanes.add(name);
  for (const action of actions) lanes.add(action.lane);
  return [...lanes];
}

/** The run's timeline, or null when no power run has this id. */
export async function runTimeline(db: Database, runId: string): Promise<RunTimeline | null> {
  const [row] = await db
    .select()
    .from(runs)
    .where(and(eq(runs.id, runId), inArray(runs.pipeline, POWER_PIPELINES)));
  if (!row) return null;
  const [actions, verdict] = await Promise.all([actionsOfRun(db, runId), verdicts(db, [row])]);
  return {
    run: runFacts(row, verdict.get(row.id)!),
    lanes: laneOrder(plannedLanes(row), actions),
    actions: actions.map((a) => ({
      id: a.id,
      lane: a.lane,
      label: a.label,
      startedAt: a.startedAt.toISOString(),
      finishedAt: a.finishedAt?.toISOString() ?? null,
      outcome: a.outcome,
      detail: a.detail,
      request: a.request,
    })),
    serverTime: new Date().toISOString(),
  };
}

export const ZPowerRunsQuery = z.object({
  /** Runs started before this instant (the previous page's last `createdAt`). */
  before: z.iso.datetime({ offset: true, error: "before: an ISO date-time" }).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});

/**
 * Every power run — drills, real outages and the ways back after them — newest first, with how its actions ended:
 * `{ runs, nextBefore }` (null on the last page).
 */
export async function listPowerRuns(
  db: Database,
  query: z.input<typeof ZPowerRunsQuery> = {},
): Promise<{ runs: PowerRunSummary[]; nextBefore: string | null }> {
  const { before, limit } = ZPowerRunsQuery.parse(query);
  const rows = await db
    .select()
    .from(runs)
    .where(
      and(
        inArray(runs.pipeline, POWER_PIPELINES),
        before ? lt(runs.createdAt, new Date(before)) : undefined,
      ),
    )
    .orderBy(desc(runs.createdAt), desc(runs.id))
    .limit(limit + 1);
  const page = rows.slice(0, limit);
  const verdictOf = await verdicts(db, page);
  const counts =
    page.length === 0
      ? []
      : await db
          .select({
            runId: powerRunActions.runId,
            outcome: powerRunActions.outcome,
            count: sql<number>`count(*)::int`,
          })
          .from(powerRunActions)
          .where(
            inArray(
              powerRunActions.runId,
              page.map((r) => r.id),
            ),
          )
          .groupBy(powerRunActions.runId, powerRunActions.outcome);
  return {
    runs: page.map((row) => {
      const mine = counts.filter((c) => c.runId === row.id);
      return {
        ...runFacts(row, verdictOf.get(row.id)!),
        actionCount: mine.reduce((sum, c) => sum + c.count, 0),
        outcomes: Object.fromEntries(mine.map((c) => [c.outcome ?? "open", c.count])),
      };
    }),
    nextBefore: rows.length > limit ? page.at(-1)!.createdAt.toISOString() : null,
  };
}
