/**
 * Scale-out: several worker processes against one Postgres (docs/production.md).
 * Real processes (test/worker-process.ts), real signals; the evidence is what the database
 * recorded — the engine's step_visits (start and end of every committed visit) and the test
 * pipelines' probes (which process ran each visit).
 */
import { beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { inArray, sql } from "drizzle-orm";
import { runs, stepVisits, workerHeartbeats } from "@/lib/db/schema";
import { scheduleTick } from "@/lib/pipeline/schedule";
import { startRun } from "@/lib/runs/start-run";
import { registerTestDatabase } from "@/test/db";
import { ensureProbeTable, testPipelines } from "@/test/fixtures/test-pipelines";
import { spawnWorker, waitFor, type WorkerProcess } from "@/test/worker-process";

const database = registerTestDatabase();

beforeAll(() => ensureProbeTable(database.url));

/** test-slow: two steps of three 300 ms visits each. */
const SLOW_VISITS_PER_RUN = 6;

/** A worker process that is stopped when the test ends, passed or not. */
async function spawn(env: Record<string, string>): Promise<WorkerProcess> {
  const worker = await spawnWorker({ DATABASE_URL: database.url, ...env });
  onTestFinished(() => worker.stop());
  return worker;
}

async function startRuns(pipelineName: "test-slow" | "test-crashable", count: number) {
  const pipeline = testPipelines(database.url)[pipelineName]!;
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    ids.push(
      await database.db.transaction((tx) =>
        startRun(tx, { pipeline, hostId: null, actor: "scale-out test" }),
      ),
    );
  }
  return ids;
}

async function statuses(runIds: string[]) {
  return database.db
    .select({ id: runs.id, status: runs.status, context: runs.context })
    .from(runs)
    .where(inArray(runs.id, runIds));
}

type Probe = { runId: string; step: string; visit: number; event: string; pid: number };

async function probes(runIds: string[]): Promise<Probe[]> {
  const result = await database.db.execute<{
    run_id: string;
    step: string;
    event: string;
    pid: number;
    visit: number | null;
  }>(sql`select run_id, step, event, pid, (data->>'visit')::int as visit from test_probe
         where run_id in (${sql.join(
           runIds.map((id) => sql`${id}::uuid`),
           sql`, `,
         )}) order by id`);
  return result.rows.map((r) => ({
    runId: r.run_id,
    step: r.step,
    visit: r.visit ?? 0,
    event: r.event,
    pid: r.pid,
  }));
}

/**
 * Every committed visit of the runs, with the processes that ran it to its end (the pids on its
 * visit-end probes, written just before the visit returns). A visit killed after its probe but
 * before its commit leaves an extra pid; the committed one is the last.
 */
async function committedVisits(runIds: string[]) {
  const visits = await database.db
    .select()
    .from(stepVisits)
    .where(inArray(stepVisits.runId, runIds))
    .orderBy(stepVisits.startedAt, stepVisits.id);
  const ends = (await probes(runIds)).filter((p) => p.event === "visit-end");
  return visits.map((v) => {
    const pids = ends
      .filter((p) => p.runId === v.runId && p.step === v.step && p.visit === v.visit)
      .map((p) => p.pid);
    return { ...v, pids, pid: pids.at(-1) };
  });
}

type Visit = Awaited<ReturnType<typeof committedVisits>>[number];

/**
 * The engine stamps a visit's start after it holds the run's row lock and its end before it
 * commits, so two visits of one run that ran at once would have overlapping intervals.
 */
function overlappingVisits(runIds: string[], visits: Visit[]): string[] {
  const overlaps: string[] = [];
  for (const runId of runIds) {
    const sorted = visits
      .filter((v) => v.runId === runId)
      .toSorted((a, b) => a.startedAt.getTime() - b.startedAt.getTime());
    for (let i = 1; i < sorted.length; i++) {
      const before = sorted[i - 1]!;
      const after = sorted[i]!;
      if (after.startedAt < before.finishedAt) {
        overlaps.push(
          `${runId}: ${before.step} #${before.visit} (pid ${before.pid}, until ${before.finishedAt.toISOString()}) and ` +
            `${after.step} #${after.visit} (pid ${after.pid}, from ${after.startedAt.toISOString()})`,
        );
      }
    }
  }
  return overlaps;
}

/** The probes of each run alternate visit-start / visit-end: the visit bodies never interleaved. */
function interleavedRuns(runIds: string[], rows: Probe[]): string[] {
  return runIds.filter((runId) =>
    rows
      .filter((p) => p.runId === runId)
      .some((p, i) => p.event !== (i % 2 === 0 ? "visit-start" : "visit-end")),
  );
}

/** Ticks of this database waiting for the row lock of a run another tick is visiting. */
async function ticksWaitingOnALock(): Promise<number> {
  const result = await database.db.execute<{ waiting: number }>(sql`
    select count(*)::int as waiting from pg_stat_activity
    where datname = current_database() and wait_event_type = 'Lock'
      and query like '%from "runs"%for no key update%'`);
  return result.rows[0]!.waiting;
}

async function waitUntilAllFinished(runIds: string[], onPoll?: () => Promise<void>) {
  return waitFor(
    `all ${runIds.length} runs to finish`,
    async () => {
      await onPoll?.();
      const rows = await statuses(runIds);
      return rows.every((r) => r.status !== "running") && rows;
    },
    45_000,
    50,
  );
}

describe("two worker processes against one Postgres", () => {
  it("share the runs' ticks between them and never visit one run twice at once, even when wake-ups race", async () => {
    const [a, b] = await Promise.all([
      spawn({ TEST_CONCURRENCY: "3" }),
      spawn({ TEST_CONCURRENCY: "3" }),
    ]);
    const runIds = await startRuns("test-slow", 8);

    // While the runs go, every run is woken every 50 ms the way Retry and Abort wake one
    // (scheduleTick). A wake-up landing on a tick in progress adds a second job for the run,
    // which the other process's free slots take at once: only the row lock keeps them apart.
    let mostWaiting = 0;
    const finished = await waitUntilAllFinished(runIds, async () => {
      for (const id of runIds) await scheduleTick(database.db, id, new Date());
      mostWaiting = Math.max(mostWaiting, await ticksWaitingOnALock());
    });

    expect(finished.map((r) => r.status)).toEqual(runIds.map(() => "succeeded"));
    const visits = await committedVisits(runIds);
    // Exactly the visits the pipeline needs: none lost, none doubled by the extra jobs.
    for (const id of runIds) {
      expect(visits.filter((v) => v.runId === id)).toHaveLength(SLOW_VISITS_PER_RUN);
    }
    // The race was real: ticks had to wait for another tick's row lock…
    expect(mostWaiting).toBeGreaterThan(0);
    // …and still no two visit bodies of one run ran at once (without the row lock every run
    // interleaves here; the context version check alone only rejects the loser's commit,
    // after its commands already ran), no visit ran to its end without committing, and the
    // committed visits' intervals never overlapped.
    expect(interleavedRuns(runIds, await probes(runIds))).toEqual([]);
    expect(visits.filter((v) => v.pids.length !== 1)).toEqual([]);
    expect(overlappingVisits(runIds, visits)).toEqual([]);

    // Work is shared tick by tick, not run by run: both processes ran a fair part of the
    // visits, and runs moved between the processes from one tick to the next.
    const byA = visits.filter((v) => v.pid === a.pid).length;
    const byB = visits.filter((v) => v.pid === b.pid).length;
    expect(byA + byB).toBe(visits.length);
    expect(Math.min(byA, byB)).toBeGreaterThanOrEqual(visits.length / 5);
    const runsOnBoth = runIds.filter((id) => {
      const pids = new Set(visits.filter((v) => v.runId === id).map((v) => v.pid));
      return pids.has(a.pid) && pids.has(b.pid);
    });
    expect(runsOnBoth.length).toBeGreaterThan(0);

    await Promise.all([a.stop(), b.stop()]);
    // A clean stop says goodbye: no heartbeat left for another process to sweep.
    expect(await database.db.select().from(workerHeartbeats)).toEqual([]);
  }, 90_000);

  it("when one of the two is killed with kill -9 in the middle of visits, the other releases its jobs and finishes every run", async () => {
    // The victim holds long visits (a step's minutes-long command) when it dies.
    const crashable = await startRuns("test-crashable", 2);
    const victim = await spawn({ TEST_CONCURRENCY: "3", TEST_LONG_VISIT_MS: "60000" });
    await waitFor("the victim to be inside both long visits", async () => {
      const started = (await probes(crashable)).filter(
        (p) => p.event === "visit-start" && p.pid === victim.pid,
      );
      return started.length === 2;
    });

    // A second process joins while the victim is busy and takes its share of new runs.
    const slow = await startRuns("test-slow", 8);
    const survivor = await spawn({ TEST_CONCURRENCY: "3", TEST_LONG_VISIT_MS: "200" });
    await waitFor("both processes to have committed visits of the new runs", async () => {
      const pids = new Set((await committedVisits(slow)).map((v) => v.pid));
      return pids.has(victim.pid) && pids.has(survivor.pid);
    });

    process.kill(victim.pid, "SIGKILL");
    await new Promise((resolve) => victim.child.once("exit", resolve));
    const killedAt = new Date();

    const finished = await waitUntilAllFinished([...crashable, ...slow]).catch((error: Error) => {
      throw new Error(`${error.message}\nsurvivor said:\n${survivor.output()}`);
    });
    expect(finished.map((r) => r.status)).toEqual(finished.map(() => "succeeded"));
    expect(survivor.output()).toMatch(/released jobs of dead workers/);

    // The long visits the victim died in were rolled back and done again by the survivor.
    for (const id of crashable) {
      const rows = (await probes([id])).map((p) => `${p.event} ${p.pid}`);
      expect(rows).toEqual([
        `visit-start ${victim.pid}`,
        `visit-start ${survivor.pid}`,
        `visit-end ${survivor.pid}`,
      ]);
      expect(finished.find((r) => r.id === id)?.context).toEqual({
        remembered: "committed before the crash",
        longVisitAttempt: 1,
      });
    }

    // The slow runs: each visit committed once, none overlapped, and after the kill only the
    // survivor worked.
    const visits = await committedVisits(slow);
    for (const id of slow) {
      expect(visits.filter((v) => v.runId === id)).toHaveLength(SLOW_VISITS_PER_RUN);
    }
    expect(overlappingVisits(slow, visits)).toEqual([]);
    expect(visits.filter((v) => v.startedAt > killedAt && v.pid !== survivor.pid)).toEqual([]);
    expect(visits.some((v) => v.pid === victim.pid)).toBe(true);
    expect(visits.some((v) => v.startedAt > killedAt)).toBe(true);

    // The victim's heartbeat is gone and none of its jobs stayed locked.
    const heartbeats = await database.db.select().from(workerHeartbeats);
    expect(heartbeats.filter((h) => h.pid === victim.pid)).toEqual([]);
    const locked = await database.db.execute<{ count: number }>(
      sql`select count(*)::int as count from graphile_worker._private_jobs where locked_by is not null`,
    );
    expect(locked.rows[0]!.count).toBe(0);
    await survivor.stop();
  }, 90_000);
});
