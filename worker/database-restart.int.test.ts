import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDb, type Database } from "@/lib/db/client";
import { trackReachability } from "@/lib/db/reachability";
import { readLogTail } from "@/lib/logs/read";
import { lostLinesMarker } from "@/lib/logs/writer";
import { startRun } from "@/lib/runs/start-run";
import { outagePipelines } from "@/test/fixtures/outage-pipelines";
import { startRestartablePostgres, type RestartablePostgres } from "@/test/restartable-postgres";
import { runRow } from "@/test/runs";
import { spawnWorker, waitFor, type WorkerProcess } from "@/test/worker-process";

/**
 * The worker process rides out a PostgreSQL restart (issue 18): one worker process, two runs in
 * flight, the database stopped for a few seconds, first with `pg_ctl stop -m fast`, then with a
 * kill -9 of the postmaster. The same process must finish both runs, with every log line.
 */

const OUTAGE_MS = 4_000;

let postgres: RestartablePostgres;
let handle: ReturnType<typeof createDb>;
let db: Database;
let worker: WorkerProcess | null = null;

beforeAll(async () => {
  postgres = await startRestartablePostgres();
  handle = createDb(postgres.url, 4, trackReachability({ log: () => {}, meanwhile: "" }));
  db = handle.db;
  worker = await spawnWorker({ DATABASE_URL: postgres.url, TEST_CONCURRENCY: "2" });
}, 120_000);
afterAll(async () => {
  await worker?.stop();
  await handle?.pool.end();
  await postgres?.close();
});

const pipelines = outagePipelines();
const start = (name: "test-quiet" | "test-chatty") =>
  db.transaction((tx) => startRun(tx, { pipeline: pipelines[name]!, hostId: null, actor: "test" }));
const logTexts = async (runId: string) =>
  (await readLogTail(db, runId, 10_000)).map((line) => line.text);

/** The run's row once it stopped running; fails at once (with its output) if the worker died. */
async function finished(runId: string) {
  return waitFor(
    `run ${runId} to finish`,
    async () => {
      if (worker!.child.exitCode !== null || worker!.child.signalCode !== null) {
        throw new Error(`the worker process exited:\n${worker!.output()}`);
      }
      const run = await runRow(db, runId);
      return run.status !== "running" && run;
    },
    90_000,
    200,
  );
}

/** Stops PostgreSQL `how`, keeps it down OUTAGE_MS, starts it again; returns when it was away. */
async function outage(how: "fast" | "kill") {
  const from = Date.now();
  await postgres.stop(how);
  await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS));
  const to = Date.now();
  await postgres.start();
  return { from, to };
}

describe.each(["fast", "kill"] as const)("a PostgreSQL restart (%s)", (how) => {
  it("leaves the worker process running; it finishes both runs and keeps every log line written meanwhile", async () => {
    const outputBefore = worker!.output().length;
    const quiet = await start("test-quiet");
    const chatty = await start("test-chatty");
    // A quiet visit has just begun (its first line is committed) and holds for 1.5 s: it ends
    // while the database is away, so its tick fails then, with nobody to record the failure.
    await waitFor("both runs to be mid-visit", async () => {
      const [quietLog, chattyLog] = await Promise.all([logTexts(quiet), logTexts(chatty)]);
      return quietLog.length > 0 && chattyLog.some((line) => line.startsWith("visit 1 line 2 "));
    });
    const away = await outage(how);

    const quietRun = await finished(quiet);
    const chattyRun = await finished(chatty);
    const output = worker!.output().slice(outputBefore);

    expect(worker!.child.exitCode, output).toBeNull();
    expect(worker!.child.signalCode, output).toBeNull();
    expect(() => process.kill(worker!.pid, 0)).not.toThrow();
    expect([quietRun.status, chattyRun.status], output).toEqual(["succeeded", "succeeded"]);
    expect((await runRow(db, quiet)).context).toMatchObject({ "Hold.done": 4 });

    // Every visit's ten lines, in order: the ones written while the database was away too.
    const lines = await logTexts(chatty);
    expect(lines.some((line) => line.startsWith("────") && line.includes("lost"))).toBe(false);
    expect(lines).not.toContain(lostLinesMarker(1));
    const visits = new Map<number, number[]>();
    const writtenWhileAway: string[] = [];
    for (const line of lines) {
      const match = /^visit (\d+) line (\d+) at (\S+)$/.exec(line);
      if (!match) continue;
      const list = visits.get(Number(match[1])) ?? [];
      list.push(Number(match[2]));
      visits.set(Number(match[1]), list);
      const at = Date.parse(match[3]!);
      if (at > away.from && at < away.to) writtenWhileAway.push(line);
    }
    expect(writtenWhileAway.length, lines.join("\n")).toBeGreaterThan(0);
    // A visit whose tick failed in the outage is visited again under the same number; what the
    // first attempt logged stays (it did run), so a visit's lines are one or more full rounds.
    for (const [visit, numbers] of visits) {
      const rounds = Math.max(1, Math.ceil(numbers.length / 10));
      const full = Array.from({ length: rounds * 10 }, (_, i) => i % 10);
      expect(numbers, `visit ${visit}`).toEqual(full);
    }

    // One line when the database went away, one when it was back; nothing unhandled.
    expect(output).toMatch(/database unreachable \(/);
    expect(output).toMatch(/database reachable again after/);
    expect(output).not.toMatch(/unhandled|uncaught/i);
  }, 180_000);
});
