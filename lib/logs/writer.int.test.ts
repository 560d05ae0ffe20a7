import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDb, type Database } from "@/lib/db/client";
import { trackReachability } from "@/lib/db/reachability";
import { runs } from "@/lib/db/schema";
import { startRestartablePostgres, type RestartablePostgres } from "@/test/restartable-postgres";
import { readLogTail } from "./read";
import { createRunLogWriter, lostLinesMarker } from "./writer";

let postgres: RestartablePostgres;
let handle: ReturnType<typeof createDb>;
let db: Database;

beforeAll(async () => {
  postgres = await startRestartablePostgres();
  handle = createDb(postgres.url, 4, trackReachability({ log: () => {}, meanwhile: "" }));
  db = handle.db;
}, 120_000);
afterAll(async () => {
  await handle?.pool.end();
  await postgres?.close();
});

async function newRun(): Promise<string> {
  const [run] = await db
    .insert(runs)
    .values({ pipeline: "test", currentStep: "S" })
    .returning({ id: runs.id });
  return run!.id;
}

const logTexts = async (runId: string) =>
  (await readLogTail(db, runId, 1000)).map((line) => line.text);

/** Watches what a writer reports, so a test can tell a retry from a loss. */
function reports() {
  const seen = { errors: 0, lost: [] as number[] };
  return {
    seen,
    onError: () => void (seen.errors += 1),
    onLost: (count: number) => void seen.lost.push(count),
  };
}

describe("the run-log writer while the database is away", () => {
  it("holds the lines written while PostgreSQL is stopped and commits them, in order, once it is back", async () => {
    const runId = await newRun();
    const report = reports();
    const writer = createRunLogWriter(db, runId, {
      flushIntervalMs: 10,
      hold: { retryMs: 100, maxRetryMs: 300 },
      ...report,
    });
    writer.line("S", "note", "before the restart");
    await writer.flush();

    await postgres.stop("fast");
    for (let i = 0; i < 5; i++) {
      writer.line("S", "output", `while stopped ${i}`);
      await new Promise((resolve) => setTimeout(resolve, 100)); // several failed flushes
    }
    await postgres.start();
    writer.line("S", "note", "after the restart");
    await writer.close();

    expect(await logTexts(runId)).toEqual([
      "before the restart",
      ...Array.from({ length: 5 }, (_, i) => `while stopped ${i}`),
      "after the restart",
    ]);
    expect(report.seen.errors).toBe(1); // one report per outage, not one per retry
    expect(report.seen.lost).toEqual([]);
  }, 120_000);

  it("waits at close for a database that comes back within closeWaitMs", async () => {
    const runId = await newRun();
    const report = reports();
    const writer = createRunLogWriter(db, runId, {
      hold: { retryMs: 100, maxRetryMs: 300, closeWaitMs: 60_000 },
      ...report,
    });
    await postgres.stop("kill");
    writer.line("S", "output", "written after the postmaster was killed");
    const closing = writer.close();
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await postgres.start();
    await closing;

    expect(await logTexts(runId)).toEqual(["written after the postmaster was killed"]);
    expect(report.seen.lost).toEqual([]);
  }, 120_000);

  it("beyond its hold limit drops the oldest lines and writes how many went", async () => {
    const runId = await newRun();
    const report = reports();
    const writer = createRunLogWriter(db, runId, {
      flushIntervalMs: 10,
      hold: { lines: 5, retryMs: 100, maxRetryMs: 300 },
      ...report,
    });
    await postgres.stop("fast");
    for (let i = 0; i < 12; i++) writer.line("S", "output", `line ${i}`);
    await writer.flush();
    await postgres.start();
    await writer.close();

    expect(await logTexts(runId)).toEqual([
      lostLinesMarker(7),
      ...Array.from({ length: 5 }, (_, i) => `line ${i + 7}`),
    ]);
    expect(report.seen.lost).toEqual([]);
  }, 120_000);

  it("gives lines up after closeWaitMs, says so, and the run's next writer puts the count in the log", async () => {
    const runId = await newRun();
    const first = reports();
    const writer = createRunLogWriter(db, runId, {
      hold: { retryMs: 50, maxRetryMs: 100, closeWaitMs: 500 },
      ...first,
    });
    await postgres.stop("fast");
    writer.line("S", "output", "one");
    writer.line("S", "output", "two");
    writer.line("S", "output", "three");
    await writer.close();
    expect(first.seen.lost).toEqual([3]);

    await postgres.start();
    const next = createRunLogWriter(db, runId, { flushIntervalMs: 10 });
    next.line("S", "note", "the next visit");
    await next.close();
    expect(await logTexts(runId)).toEqual([lostLinesMarker(3), "the next visit"]);
  }, 120_000);
});
