import { readFile } from "node:fs/promises";
import path from "node:path";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLab, type LabNode } from "@/lab";
import { labSession } from "@/lab/test-helpers";

import { runLogHeads, runLogSources, runs } from "@/lib/db/schema";
import { shQuote, type SshSession } from "@/lib/ssh";
import { registerTestDatabase } from "@/test/db";
import { runLogFileLines } from "@/test/runs";
import { readSourcePosition } from "./append";
import { RECREATED_MARKER, tailIntoRunLog } from "./tail-remote-file";
import { foldCarriageReturns } from "./text";

const testDatabase = registerTestDatabase(4);
let lab: LabNode;

beforeAll(async () => {
  lab = await startLab();
});
afterAll(() => lab.stop());

const connect = () => labSession(lab, { pinnedHostKey: lab.ssh.hostKeySha256 });

async function newRun(): Promise<string> {
  const [run] = await testDatabase.db
    .insert(runs)
    .values({ pipeline: "test", currentStep: "BuildVmTemplate" })
    .returning({ id: runs.id });
  return run!.id;
}

/** Appends lines `from`..`to` to the file in the lab shell: colours, `\r` progress, UTF-8, markup. */
async function writeLines(session: SshSession, file: string, from: number, to: number) {
  const script = `
for ((i=${from}; i<=${to}; i++)); do
  if (( i % 50 == 0 )); then
    printf '\\033[33mdownload %d: 10%%\\r\\033[33mdownload %d: 60%%\\r\\033[32mdownload %d: 100%%\\033[0m\\r\\n' $i $i $i
  else
    printf '\\033[36m[%05d]\\033[0m step output ünïcödé <b>%d</b>\\n' $i $i
  fi
done >> ${file}
# an unterminated progress line, finished by the next burst
printf 'pending %d: 5%%\\r' ${to} >> ${file}`;
  const result = await session.exec(`bash -c ${shQuote(script)}`);
  expect(result.code, result.stderr).toBe(0);
}

/** The documented folding applied to the host's bytes: what the stored log must equal. */
function expectedLines(bytes: string): string[] {
  const lines = bytes.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  return lines.map(foldCarriageReturns);
}

describe("tailing a host file into the run log", () => {
  it("stores 10 000 lines with colours and \\r progress equal to the host's bytes, across a worker restart, with no gap and no duplicate", async () => {
    const runId = await newRun();
    const file = "build.log";
    let session = await connect();
    try {
      const bursts = [
        [1, 1800],
        [1801, 4000],
        [4001, 6500],
        [6501, 10000],
      ] as const;
      for (const [index, [from, to]] of bursts.entries()) {
        await writeLines(session, file, from, to);
        // Small reads so a burst takes several reads, each ending mid-line.
        await tailIntoRunLog({
          db: testDatabase.db,
          session,
          runId,
          step: "BuildVmTemplate",
          path: file,
          maxBytes: 64 * 1024 + 7,
          maxReads: 100,
        });
        if (index === 1) {
          // "Worker restart": the session is gone; a new one continues from the stored offset.
          session.close();
          session = await connect();
        }
      }
      // The writer finishes the pending line; the last poll writes it.
      await session.exec(`printf 'done\\n' >> ${file}`);
      await tailIntoRunLog({
        db: testDatabase.db,
        session,
        runId,
        step: "BuildVmTemplate",
        path: file,
        finish: true,
      });
    } finally {
      session.close();
    }
    // Written in root's home, /root: the lab root folder's root/.
    const host = await readFile(path.join(lab.root, "root", file), "utf8");
    const stored = await runLogFileLines(testDatabase.db, runId, { markers: true });
    expect(stored.length).toBe(10_001);
    expect(stored).toEqual(expectedLines(host));
    expect(stored[49]).toBe("\u001b[33m\u001b[33m\u001b[32mdownload 50: 100%\u001b[0m");
    const position = await readSourcePosition(testDatabase.db, runId, file);
    expect(position.offset).toBe(Buffer.byteLength(host));
    expect(position.pending).toBe("");
  });

  it("reads only new bytes: a poll with nothing new reads nothing and stores nothing", async () => {
    const runId = await newRun();
    const session = await connect();
    try {
      await session.exec("printf 'a\\nb\\n' > quiet.log");
      await tailIntoRunLog({ db: testDatabase.db, session, runId, step: "S", path: "quiet.log" });
      const stored = () =>
        Promise.all([
          testDatabase.db.select().from(runLogSources).where(eq(runLogSources.runId, runId)),
          testDatabase.db.select().from(runLogHeads).where(eq(runLogHeads.runId, runId)),
        ]);
      const rowsBefore = await stored();
      const before = lab.commands.length;
      const result = await tailIntoRunLog({
        db: testDatabase.db,
        session,
        runId,
        step: "S",
        path: "quiet.log",
      });
      expect(result.lines).toBe(0);
      expect(lab.commands.length).toBe(before + 1);
      expect(await runLogFileLines(testDatabase.db, runId, { markers: true })).toEqual(["a", "b"]);
      // Not even the position is written again (its updated_at would move).
      expect(await stored()).toEqual(rowsBefore);
    } finally {
      session.close();
    }
  });

  it("waits for a file that does not exist yet", async () => {
    const runId = await newRun();
    const session = await connect();
    try {
      const result = await tailIntoRunLog({
        db: testDatabase.db,
        session,
        runId,
        step: "S",
        path: "later.log",
      });
      expect(result).toMatchObject({ missing: true, lines: 0 });
      await session.exec("printf 'first\\n' > later.log");
      await tailIntoRunLog({ db: testDatabase.db, session, runId, step: "S", path: "later.log" });
      expect(await runLogFileLines(testDatabase.db, runId, { markers: true })).toEqual(["first"]);
    } finally {
      session.close();
    }
  });

  it("starts over with a marker when the file is recreated (new inode, or truncated in place and rewritten)", async () => {
    const runId = await newRun();
    const session = await connect();
    const file = "rebuild.log";
    const tail = () =>
      tailIntoRunLog({ db: testDatabase.db, session, runId, step: "S", path: file });
    try {
      await session.exec(`printf 'old 1\\nold 2\\nold partial' > ${file}`);
      await tail();
      // A new build: a new file replaces the old one (new inode), shorter than the old offset.
      await session.exec(`printf 'new 1\\n' > ${file}.tmp && mv ${file}.tmp ${file}`);
      await tail();
      // Truncated in place (same inode) and rewritten past the old offset before the next poll.
      await session.exec(
        `: > ${file}; printf 'third build, a longer first line\\nthird 2\\n' >> ${file}`,
      );
      await tail();
      expect(await runLogFileLines(testDatabase.db, runId, { markers: true })).toEqual([
        "old 1",
        "old 2",
        "old partial",
        RECREATED_MARKER(file),
        "new 1",
        RECREATED_MARKER(file),
        "third build, a longer first line",
        "third 2",
      ]);
    } finally {
      session.close();
    }
  });
});
