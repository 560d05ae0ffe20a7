/**
 * A waiter's progress over real SSH into a real run log (watch-waiter.ts, lib/pipeline/waits.ts
 * reportProgress): the watch streams a host file while the run waits, visits tail it in between,
 * and the stored log is the host's bytes — nothing skipped, nothing twice; the phase line moves
 * without a visit; and a run that moved on gets nothing written.
 */
import fs from "node:fs";
import path from "node:path";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLab, type LabNode } from "@/lab";
import { labSession } from "@/lab/test-helpers";
import { runs } from "@/lib/db/schema";
import { readSourcePosition } from "@/lib/logs/append";
import { tailIntoRunLog } from "@/lib/logs/tail-remote-file";
import { foldCarriageReturns } from "@/lib/logs/text";
import { reportProgress, type WaitingRun } from "@/lib/pipeline/waits";
import type { WaitProgress } from "@/lib/pipeline/step";
import { sh, type SshSession } from "@/lib/ssh";
import { registerTestDatabase } from "@/test/db";
import { runLogFileLines } from "@/test/runs";
import { printSignature, takeSignature, watchStatusCommand } from "./remote-watch";
import { runWatch } from "./watch-waiter";

const testDatabase = registerTestDatabase(4);
let lab: LabNode;
let session: SshSession;

const STEP = "BuildVmTemplate";
const HOST_DIR = "/var/lib/clupilot/watch-waiter-test";
const LOG = `${HOST_DIR}/build.log`;
const watched = { dir: sh`${HOST_DIR}`, files: ["state"], shown: "phase", pidFiles: [] };

beforeAll(async () => {
  lab = await startLab();
  session = await labSession(lab, { pinnedHostKey: lab.ssh.hostKeySha256 });
});
afterAll(async () => {
  session?.close();
  await lab?.stop();
});

const local = (file: string) => path.join(lab.root, HOST_DIR, file);
const write = (file: string, text: string) => fs.writeFileSync(local(file), text);

async function waitingRun(): Promise<WaitingRun> {
  fs.rmSync(local(""), { recursive: true, force: true });
  fs.mkdirSync(local(""), { recursive: true });
  write("state", "running\n");
  write("phase", "fetch image\n");
  write("build.log", "");
  const [run] = await testDatabase.db
    .insert(runs)
    .values({ pipeline: "test", currentStep: STEP, stepVisit: 1, phase: "fetch image" })
    .returning({ id: runs.id });
  return { runId: run!.id, step: STEP, visit: 1, seconds: 30 };
}

const progressFor = (run: WaitingRun): WaitProgress => ({
  report: (shown) => reportProgress(testDatabase.db, run, shown),
});

/** One visit's copy of the log: what a polling BuildVmTemplate visit does first. */
const tail = (runId: string, finish = false) =>
  tailIntoRunLog({ db: testDatabase.db, session, runId, step: STEP, path: LOG, finish });

/** One wait: the watch from where the run log's copy ends, until `during` is done with it. */
async function wait(run: WaitingRun, during: () => Promise<void>, seconds = 20) {
  const baseline = takeSignature((await session.exec(printSignature(watched))).stdout).signature!;
  const from = await readSourcePosition(testDatabase.db, run.runId, LOG);
  const watching = runWatch(
    session,
    watchStatusCommand(watched, baseline, seconds, {
      shownSeen: "fetch image",
      followed: { path: LOG, offset: from.offset, identity: from.inode },
    }),
    {
      signal: AbortSignal.timeout(60_000),
      timeoutMs: 60_000,
      progress: progressFor(run),
      shows: { phase: (text) => text.trim(), log: { step: STEP, from } },
    },
  );
  await during();
  return watching;
}

/** Lines `from`..`to` with colours, UTF-8 and `\r` progress, then an unterminated line. */
function burst(from: number, to: number): string {
  let text = "";
  for (let i = from; i <= to; i++)
    text +=
      i % 50 === 0
        ? `\u001b[33mdownload ${i}: 10%\r\u001b[32mdownload ${i}: 100%\u001b[0m\r\n`
        : `\u001b[36m[${String(i).padStart(5, "0")}]\u001b[0m step output ünïcödé ${i}\n`;
  // No `\r` in it: joined to the next burst's first line, whose start it then visibly is.
  return `${text}unterminated after ${to} `;
}

async function until(what: string, test: () => Promise<boolean>, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await test())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const phaseOf = async (runId: string) =>
  (await testDatabase.db.select().from(runs).where(eq(runs.id, runId)))[0]!.phase;

describe("a waiter shows the build while the run waits", () => {
  it("visits and waits take turns on a growing log: the stored log is the host's bytes, with no gap and no duplicate", async () => {
    const run = await waitingRun();
    const bursts = [
      [1, 1500],
      [1501, 3000],
      [3001, 4500],
      [4501, 6000],
    ] as const;
    for (const [index, [from, to]] of bursts.entries()) {
      if (index % 2 === 0) {
        fs.appendFileSync(local("build.log"), burst(from, to));
        await tail(run.runId);
        continue;
      }
      // Written while the watch runs, in pieces: it streams them as they come.
      const result = await wait(run, async () => {
        await new Promise((resolve) => setTimeout(resolve, 700));
        const text = burst(from, to);
        for (let cut = 0; cut < text.length; cut += 40_000) {
          fs.appendFileSync(local("build.log"), text.slice(cut, cut + 40_000));
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        await until("the burst in the run log", async () =>
          (await runLogFileLines(testDatabase.db, run.runId, { markers: true })).some((line) =>
            line.includes(`[${String(to - 1).padStart(5, "0")}]`),
          ),
        );
        write("state", "ok\n");
      });
      expect(result.changed).toBe(true);
      write("state", "running\n");
    }
    await tail(run.runId, true);
    const host = fs.readFileSync(local("build.log"), "utf8");
    const expected = host.split("\n").map(foldCarriageReturns);
    expect(await runLogFileLines(testDatabase.db, run.runId, { markers: true })).toEqual(expected);
  }, 120_000);

  it("each new phase reaches the run's phase line during the wait, without a visit", async () => {
    const run = await waitingRun();
    const result = await wait(run, async () => {
      await new Promise((resolve) => setTimeout(resolve, 700));
      write("phase", "customise image\n");
      await until("the phase line", async () => (await phaseOf(run.runId)) === "customise image");
      write("state", "ok\n");
    });
    expect(result.changed).toBe(true);
    const [row] = await testDatabase.db.select().from(runs).where(eq(runs.id, run.runId));
    expect(row!.stepVisit).toBe(1);
  }, 60_000);

  it("a run that moved on (a visit committed since) gets nothing written, and the waiter ends the watch, not the loop at its cap", async () => {
    const run = await waitingRun();
    const result = await wait(run, async () => {
      await new Promise((resolve) => setTimeout(resolve, 700));
      await testDatabase.db.update(runs).set({ stepVisit: 2 }).where(eq(runs.id, run.runId));
      write("phase", "customise image\n");
      fs.appendFileSync(local("build.log"), "a line for nobody\n");
    });
    // Ended by the waiter as the run moved on (no exit status: it closed the channel), not by
    // the loop at its 20-s cap (exit 0, `unchanged`).
    expect(result).toEqual({ changed: false, code: null, stderr: "" });
    expect(await phaseOf(run.runId)).toBe("fetch image");
    expect(await runLogFileLines(testDatabase.db, run.runId, { markers: true })).toEqual([]);
    // The next visit's tail still finds the line: the waiter's position was never saved.
    expect((await readSourcePosition(testDatabase.db, run.runId, LOG)).offset).toBe(0);
  }, 60_000);
});
