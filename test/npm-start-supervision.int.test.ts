import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { LIVE_CHANNEL } from "@/lib/live/notify";
import { POSTGRES_GONE } from "@/lib/supervisor/embedded-postgres-service";
import {
  isRunning,
  READY_LINE,
  startSupervisedConsole,
  type SupervisedConsole,
} from "./supervised-console";
import { waitFor } from "./worker-process";

/**
 * npm start's supervision of the real worker (worker/main.ts) and the real embedded PostgreSQL
 * (test/fixtures/supervised-console.ts composes them with scripts/console-processes.ts, as
 * scripts/start.ts does): kill -9 of the worker, kill -9 of the postmaster, then one Ctrl-C.
 */

let harness: SupervisedConsole | undefined;

afterAll(() => harness?.close());

describe("npm start's supervision of the worker and the embedded PostgreSQL", () => {
  it("brings a killed worker and a killed database back, records both for the pages, and stops everything on Ctrl-C", async () => {
    harness = await startSupervisedConsole();
    const { waitForLine, lines, exited } = harness;

    const [, firstWorker] = await waitForLine(READY_LINE);
    const databaseUrl = harness.databaseUrl();
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
    const [, secondWorker] = await waitForLine(READY_LINE, 2);
    expect(secondWorker).not.toBe(firstWorker);
    expect(isRunning(Number(secondWorker))).toBe(true);
    // The open pages hear of it on the live channel.
    await waitFor("the process-restart notification", async () =>
      notified.some((m) => (m as { type?: string }).type === "process-restart"),
    );
    await listener.end();

    // kill -9 of the postmaster: noticed by pg_ctl status, started again on the same port.
    const postmaster = harness.postmasterPid();
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
    const newPostmaster = harness.postmasterPid();
    expect(newPostmaster).not.toBeNull();
    expect(newPostmaster).not.toBe(postmaster);

    // One Ctrl-C: the worker(s) and the database are gone, nothing restarts them.
    harness.process.kill("SIGINT");
    expect(await exited).toBe(0);
    expect(harness.output()).toContain(
      "[clupilot] Ctrl-C: stopping worker, web server and database",
    );
    const workers = lines(READY_LINE).map((m) => Number(m[1]));
    await waitFor(
      "every worker and the database gone",
      async () => !workers.some(isRunning) && harness!.postmasterPid() === null,
    );
  }, 120_000);
});
