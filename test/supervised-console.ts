import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort } from "@/lib/db/embedded-postgres";
import type { CrashLoopRule } from "@/lib/supervisor/crash-loop";
import type { RestartBackoff } from "@/lib/supervisor/restart-backoff";
import { waitFor } from "./worker-process";

/**
 * npm start without the web server, as a real process (test/fixtures/supervised-console.ts):
 * the embedded PostgreSQL and the real worker under the supervisor, on a throw-away data folder
 * and a free port, for the tests of what npm start's supervision does with real processes.
 */
export type SupervisedConsole = {
  process: ChildProcess;
  pgPort: number;
  output(): string;
  lines(pattern: RegExp): RegExpMatchArray[];
  waitForLine(pattern: RegExp, count?: number, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** The console's database (its URL is written once the migrations ran). */
  databaseUrl(): string;
  /** The postmaster's pid now, or null while none runs. */
  postmasterPid(): number | null;
  exited: Promise<number | null>;
  /** Stops it (SIGTERM) and makes sure no worker or database of it is left; removes the folder. */
  close(): Promise<void>;
};

export const READY_LINE = /^\[worker\] ready \(pid (\d+)\)/;

export async function startSupervisedConsole(
  rules: { backoff?: RestartBackoff; crashLoop?: CrashLoopRule } = {},
): Promise<SupervisedConsole> {
  const root = path.resolve(import.meta.dirname, "..");
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), "clupilot-supervision-"));
  // As root the embedded Postgres runs as `postgres`, which must reach its cluster in here.
  fs.chmodSync(folder, 0o755);
  const pgPort = await freePort();
  // One secret key for the console and this test process: what a test seals (a notification
  // target's URL) the console's worker can open.
  process.env.CLUPILOT_SECRET_KEY ??= crypto.randomBytes(32).toString("hex");
  const child = spawn(
    process.execPath,
    ["--import", "tsx", "test/fixtures/supervised-console.ts", JSON.stringify(rules)],
    {
      cwd: root,
      env: {
        ...process.env,
        CLUPILOT_DATA_DIR: folder,
        CLUPILOT_PG_PORT: String(pgPort),
        CLUPILOT_SECRET_KEY: process.env.CLUPILOT_SECRET_KEY,
        DATABASE_URL: "",
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let output = "";
  child.stdout!.on("data", (chunk) => (output += chunk));
  child.stderr!.on("data", (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  const lines = (pattern: RegExp) =>
    output.split("\n").flatMap((line) => {
      const match = pattern.exec(line);
      return match ? [match] : [];
    });
  const postmasterPid = () => {
    const ps = execFileSync("ps", ["-eo", "pid=,args="], { encoding: "utf8" });
    // Its backends' titles carry no `-p`.
    const line = ps
      .split("\n")
      .find((l) => /\bpostgres -D /.test(l) && l.includes(` -p ${pgPort} `));
    return line ? Number(line.trim().split(/\s+/)[0]) : null;
  };
  return {
    process: child,
    pgPort,
    output: () => output,
    lines,
    waitForLine: (pattern, count = 1, timeoutMs = 60_000) =>
      waitFor(
        `${count} line(s) ${pattern} in:\n${output}`,
        async () => lines(pattern)[count - 1],
        timeoutMs,
        50,
      ),
    databaseUrl: () => fs.readFileSync(path.join(folder, "database-url"), "utf8"),
    postmasterPid,
    exited,
    async close() {
      // A failed test must not leave a worker or a database behind.
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
      await exited;
      clearTimeout(timer);
      for (const pid of lines(READY_LINE).map((m) => Number(m[1]))) {
        if (isRunning(pid)) process.kill(pid, "SIGKILL");
      }
      const postmaster = postmasterPid();
      if (postmaster) process.kill(postmaster, "SIGKILL");
      fs.rmSync(folder, { recursive: true, force: true });
    },
  };
}

/** Whether `pid` is a live process (a zombie waiting for its parent to reap it is not). */
export function isRunning(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state !== "Z" && state !== "X";
  } catch {
    return false;
  }
}
