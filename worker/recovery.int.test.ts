import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq, sql } from "drizzle-orm";
import { createDb, type Database } from "@/lib/db/client";
import { runs, workerHeartbeats } from "@/lib/db/schema";
import { recoverDeadWorkers } from "@/lib/pipeline/recovery";
import { startRun } from "@/lib/runs/start-run";
import { createTestDatabase } from "@/test/db";
import { ensureProbeTable, testPipelines } from "@/test/fixtures/test-pipelines";
import { spawnWorker, waitFor, type WorkerProcess } from "@/test/worker-process";

let db: Database;
let url: string;
let cleanup: () => Promise<void>;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  const database = await createTestDatabase();
  url = database.url;
  await ensureProbeTable(url);
  const handle = createDb(url, 4);
  db = handle.db;
  cleanup = async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await handle.pool.end();
    await database.drop();
  };
});
afterAll(() => cleanup());

const pipelines = () => testPipelines(url);

async function probes(runId: string) {
  const result = await db.execute<{
    event: string;
    pid: number;
    at: string;
    data: { step?: string; visit?: number };
  }>(sql`select event, pid, at, data from test_probe where run_id = ${runId} order by id`);
  return result.rows.map((r) => ({ ...r, at: new Date(r.at).getTime() }));
}

async function runStatus(runId: string) {
  const [run] = await db.select().from(runs).where(eq(runs.id, runId));
  return run!;
}

describe("worker crash recovery", () => {
  it("after kill -9 mid-tick and a restart, the run continues (not after graphile-worker's 4-hour lock) and keeps what it committed", async () => {
    const pipeline = pipelines()["test-crashable"]!;
    const runId = await db.transaction((tx) =>
      startRun(tx, { pipeline, hostId: null, actor: "test" }),
    );
    const first = await spawnWorker({ DATABASE_URL: url, TEST_LONG_VISIT_MS: "4000" });
    workers.push(first);
    await waitFor("the long visit to start", async () =>
      (await probes(runId)).some((p) => p.event === "visit-start"),
    );
    process.kill(first.pid, "SIGKILL");
    await new Promise((resolve) => first.child.once("exit", resolve));

    const locked = await db.execute<{ locked_by: string | null }>(
      sql`select locked_by from graphile_worker._private_jobs where key = ${`run:${runId}`}`,
    );
    expect(locked.rows[0]?.locked_by).toBeTruthy(); // graphile-worker alone would wait 4 hours
    expect((await runStatus(runId)).status).toBe("running");

    const second = await spawnWorker({ DATABASE_URL: url, TEST_LONG_VISIT_MS: "200" });
    workers.push(second);
    const done = await waitFor(
      "the run to finish",
      async () => {
        const run = await runStatus(runId);
        return run.status !== "running" && run;
      },
      60_000,
      200,
    ).catch(async (error: Error) => {
      const jobs = await db.execute(sql`select * from graphile_worker._private_jobs`);
      throw new Error(
        `${error.message}\nworker said:\n${second.output()}\njobs: ${JSON.stringify(jobs.rows)}`,
      );
    });
    await second.stop();
    expect(done.status).toBe("succeeded");
    // The crashed visit's write was rolled back; the context from before the crash survived.
    expect(done.context).toEqual({ remembered: "committed before the crash", longVisitAttempt: 1 });
    const visits = (await probes(runId)).filter((p) => p.event === "visit-start");
    expect(visits.map((v) => v.pid)).toEqual([first.pid, second.pid]);
    const heartbeats = await db.select().from(workerHeartbeats);
    expect(heartbeats.every((h) => h.pid !== first.pid)).toBe(true);
  }, 90_000);

  it("releases a silent worker's jobs only once its heartbeat is stale", async () => {
    await db.insert(workerHeartbeats).values({
      workerId: "worker-elsewhere",
      hostname: "another-machine",
      pid: 1,
      lastSeenAt: new Date(Date.now() - 10_000),
    });
    const fresh = await recoverDeadWorkers(db, [], { staleAfterSeconds: 30 });
    expect(fresh.unlockedWorkers).not.toContain("worker-elsewhere");
    const stale = await recoverDeadWorkers(db, [], { staleAfterSeconds: 5 });
    expect(stale.unlockedWorkers).toContain("worker-elsewhere");
    expect(
      await db
        .select()
        .from(workerHeartbeats)
        .where(eq(workerHeartbeats.workerId, "worker-elsewhere")),
    ).toEqual([]);
  });
});

describe("two worker processes", () => {
  it("never run two ticks of one run at the same time, even with duplicate jobs", async () => {
    // Both workers up before there is any work: the other one's start-up (tsx, seconds under
    // load) must not decide whether it gets a job at all.
    const [a, b] = await Promise.all([
      spawnWorker({ DATABASE_URL: url, TEST_CONCURRENCY: "3" }),
      spawnWorker({ DATABASE_URL: url, TEST_CONCURRENCY: "3" }),
    ]);
    workers.push(a, b);
    const pipeline = pipelines()["test-slow"]!;
    const runIds: string[] = [];
    for (let i = 0; i < 4; i++) {
      runIds.push(
        await db.transaction((tx) => startRun(tx, { pipeline, hostId: null, actor: "test" })),
      );
    }
    // Extra jobs without the job key: graphile-worker would happily run these concurrently.
    for (const runId of runIds) {
      for (let i = 0; i < 3; i++) {
        await db.execute(
          sql`select graphile_worker.add_job('run-tick', json_build_object('runId', ${runId}::text))`,
        );
      }
    }
    await waitFor(
      "all runs to finish",
      async () => {
        const statuses = await Promise.all(runIds.map(runStatus));
        return statuses.every((r) => r.status === "succeeded");
      },
      60_000,
      200,
    );

    const pids = new Set<number>();
    for (const runId of runIds) {
      const rows = await probes(runId);
      rows.forEach((r) => pids.add(r.pid));
      // Strictly alternating start/end per run means no two visits ever overlapped.
      expect(rows.map((r) => r.event)).toEqual(
        Array.from({ length: rows.length }, (_, i) => (i % 2 === 0 ? "visit-start" : "visit-end")),
      );
      expect(rows.filter((r) => r.event === "visit-start")).toHaveLength(6);
    }
    expect(pids).toEqual(new Set([a.pid, b.pid]));
  }, 90_000);
});
