import { execFileSync, spawn } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "@/lib/db/embedded-postgres";
import { LIVE_CHANNEL } from "@/lib/pipeline/schedule";
import { POSTGRES_GONE } from "@/lib/supervisor/embedded-postgres-service";
import { waitFor } from "./worker-process";

/**
 * npm start's supervision of the real worker (worker/main.ts) and the real embedded PostgreSQL
 * (test/fixtures/supervised-console.ts composes them with scripts/console-processes.ts, as
 * scripts/start.ts does): kill -9 of the worker, kill -9 of the postmaster, then one Ctrl-C.
 */

const root = path.resolve(import.meta.dirname, "..");
const folder = fs.mkdtempSync(path.join(os.tmpdir(), "clupilot-supervision-"));
fs.chmodSync(folder, 0o755);
let output = "";
let pgPort = 0;
const started: { pid: number }[] = [];

const lines = (pattern: RegExp) =>
  output.split("\n").flatMap((line) => {
    const match = pattern.exec(line);
    return match ? [match] : [];
  });
const waitForLine = (pattern: RegExp, count = 1, timeoutMs = 60_000) =>
  waitFor(
    `${count} line(s) ${pattern} in:\n${output}`,
    async () => lines(pattern)[count - 1],
    timeoutMs,
    50,
  );

/** The postmaster of the embedded cluster on `port` (its backends' titles carry no `-p`). */
function postmasterPid(port: number): number | null {
  const ps = execFileSync("ps", ["-eo", "pid=,args="], { encoding: "utf8" });
  const line = ps.split("\n").find((l) => /\bpostgres -D /.test(l) && l.includes(` -p ${port} `));
  return line ? Number(line.trim().split(/\s+/)[0]) : null;
}

function isRunning(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state !== "Z" && state !== "X";
  } catch {
    return false;
  }
}

afterAll(async () => {
  // A failed test must not leave a worker or a database behind.
  for (const { pid } of started) if (isRunning(pid)) process.kill(pid, "SIGTERM");
  await waitFor("the harness gone", async () => !started.some((p) => isRunning(p.pid)), 30_000);
  for (const pid of lines(/^\[worker\] ready \(pid (\d+)\)/).map((m) => Number(m[1]))) {
    if (isRunning(pid)) process.kill(pid, "SIGKILL");
  }
  const postmaster = pgPort ? postmasterPid(pgPort) : null;
  if (postmaster) process.kill(postmaster, "SIGKILL");
  fs.rmSync(folder, { recursive: true, force: true });
});

describe("npm start's supervision of the worker and the embedded PostgreSQL", () => {
  it("brings a killed worker and a killed database back, records both for the pages, and stops everything on Ctrl-C", async () => {
    pgPort = await freePort();
    const harness = spawn(
      process.execPath,
      ["--import", "tsx", "test/fixtures/supervised-console.ts"],
      {
        cwd: root,
        env: {
          ...process.env,
          CLUPILOT_DATA_DIR: folder,
          CLUPILOT_PG_PORT: String(pgPort),
          CLUPILOT_SECRET_KEY: crypto.randomBytes(32).toString("hex"),
          DATABASE_URL: "",
        },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    started.push({ pid: harness.pid! });
    harness.stdout.on("data", (chunk) => (output += chunk));
    harness.stderr.on("data", (chunk) => (output += chunk));
    const exited = new Promise<number | null>((resolve) => harness.once("exit", resolve));

    const [, firstWorker] = await waitForLine(/^\[worker\] ready \(pid (\d+)\)/);
    const databaseUrl = fs.readFileSync(path.join(folder, "database-url"), "utf8");
    const listener = new pg.Client({ connectionString: databaseUrl });
    const notified: unknown[] = [];
    listener.on("error", () => {}); // the database is killed below
    listener.on("notification", (n) => notified.push(JSON.parse(n.payload ?? "null")));
    await listener.connect();
    await listener.query(`LISTEN ${LIVE_CHANNEL}`);

    // kill -9 of the worker: one line, then the worker is back with a new pid.
    process.kill(Number(firstWorker), "SIGKILL");
    const [, ending] = await waitForLine(
      /^\[clupilot\] worker ended \((.+?)\) after .+; restarting it in 1 s/,
    );
    expect(ending).toBe("killed by SIGKILL");
    const [, secondWorker] = await waitForLine(/^\[worker\] ready \(pid (\d+)\)/, 2);
    expect(secondWorker).not.toBe(firstWorker);
    expect(isRunning(Number(secondWorker))).toBe(true);
    // The open pages hear of it on the live channel.
    await waitFor("the process-restart notification", async () =>
      notified.some((m) => (m as { type?: string }).type === "process-restart"),
    );
    await listener.end();

    // kill -9 of the postmaster: noticed by pg_ctl status, started again on the same port.
    const postmaster = postmasterPid(pgPort);
    expect(postmaster).not.toBeNull();
    process.kill(postmaster!, "SIGKILL");
    await waitForLine(
      new RegExp(
        `^\\[clupilot\\] database ended \\(${POSTGRES_GONE}\\) after .+; restarting it in 1 s`,
      ),
    );
    const restarts = await waitFor(
      "both restarts recorded once the database answers again",
      async () => {
        const client = new pg.Client({ connectionString: databaseUrl });
        client.on("error", () => {});
        try {
          await client.connect();
          const { rows } = await client.query<{ process: string; ending: string }>(
            "select process, ending from console_process_restarts order by id",
          );
          return rows.length >= 2 ? rows : null;
        } catch {
          return null; // not back yet
        } finally {
          await client.end().catch(() => {});
        }
      },
      60_000,
      500,
    );
    expect(restarts.slice(0, 2)).toEqual([
      { process: "worker", ending: "killed by SIGKILL" },
      { process: "database", ending: POSTGRES_GONE },
    ]);
    const newPostmaster = postmasterPid(pgPort);
    expect(newPostmaster).not.toBeNull();
    expect(newPostmaster).not.toBe(postmaster);

    // One Ctrl-C: the worker(s) and the database are gone, nothing restarts them.
    harness.kill("SIGINT");
    expect(await exited).toBe(0);
    expect(output).toContain("[clupilot] Ctrl-C: stopping worker, web server and database");
    const workers = lines(/^\[worker\] ready \(pid (\d+)\)/).map((m) => Number(m[1]));
    await waitFor(
      "every worker and the database gone",
      async () => !workers.some(isRunning) && postmasterPid(pgPort) === null,
    );
  }, 120_000);
});
