import { afterAll, beforeAll, expect, it } from "vitest";
import { createDb } from "@/lib/db/client";
import { trackReachability } from "@/lib/db/reachability";
import { startRun } from "@/lib/runs/start-run";
import { outagePipelines } from "@/test/fixtures/outage-pipelines";
import { startRestartablePostgres, type RestartablePostgres } from "@/test/restartable-postgres";
import { runRow } from "@/test/runs";
import { spawnWorker, waitFor, type WorkerProcess } from "@/test/worker-process";

/**
 * Found by the soak (issue 18, `npm run soak -- --minutes 2 --seed 12`): a worker killed while
 * PostgreSQL restarted was started again by npm start's supervisor before the database was back,
 * and exited at once ("could not start: connect ECONNREFUSED") — again and again, each time
 * after a longer backoff, while the database was on its way. A worker that starts during a
 * database outage waits for the database instead, and then takes ticks.
 */

let postgres: RestartablePostgres;
let worker: Promise<WorkerProcess> | null = null;

beforeAll(async () => {
  postgres = await startRestartablePostgres();
}, 120_000);
afterAll(async () => {
  await (await worker?.catch(() => null))?.stop();
  await postgres?.close();
});

it("a worker process started while its database is down waits for it, then runs ticks", async () => {
  await postgres.stop("fast");
  let tried = false;
  worker = spawnWorker(
    { DATABASE_URL: postgres.url, TEST_CONCURRENCY: "2" },
    undefined,
    (output) => {
      if (/database unreachable/.test(output)) tried = true;
    },
  );
  let exited: Error | null = null;
  worker.catch((error: Error) => (exited = error));

  // It has tried the database (however long its start-up took on this machine) and, seconds
  // later, is still there, not ready: it waits instead of exiting.
  await waitFor("the worker to find its database away", async () => tried || exited, 60_000, 50);
  expect(exited).toBeNull();
  await new Promise((resolve) => setTimeout(resolve, 3_000));
  expect(exited).toBeNull();

  await postgres.start();
  const started = await worker;
  expect(started.output()).toMatch(/database unreachable \(.*ECONNREFUSED.*\)/);

  const handle = createDb(postgres.url, 2, trackReachability({ log: () => {}, meanwhile: "" }));
  try {
    const pipelines = outagePipelines();
    const runId = await handle.db.transaction((tx) =>
      startRun(tx, { pipeline: pipelines["test-quiet"]!, hostId: null, actor: "test" }),
    );
    const run = await waitFor(
      `run ${runId} to finish`,
      async () => {
        const row = await runRow(handle.db, runId);
        return row.status !== "running" && row;
      },
      60_000,
      200,
    );
    expect(run.status).toBe("succeeded");
  } finally {
    await handle.pool.end();
  }
}, 120_000);
