import {
  embeddedPostgresStatusProbe,
  startEmbeddedPostgres,
  type EmbeddedPostgresHandle,
} from "@/lib/db/embedded-postgres";
import type { Service, ServiceRun } from "./supervisor";

export const POSTGRES_GONE = "server process gone, says pg_ctl status";

/** The longest the database waits before it is started again (the others: up to 30 s). */
export const DATABASE_MAX_RESTART_DELAY_MS = 5_000;

/**
 * The embedded PostgreSQL as a supervised service. It runs detached (pg_ctl, its own session),
 * so no exit event tells us it died: each run polls `pg_ctl status` and ends when pg_ctl says no
 * server runs on the data folder. An answer pg_ctl could not give ("unknown") is never taken for
 * a dead server — restarting would stop a server that may be running fine — it is logged once
 * and polled again.
 */
export function embeddedPostgresService(options: {
  dir: string;
  port: number;
  log(line: string): void;
  /** Where PostgreSQL's own start-up output goes (initdb, "stopping a server left running"). */
  postgresLog?: (line: string) => void;
  pollMs?: number;
}): Service & { handle(): EmbeddedPostgresHandle } {
  const pollMs = options.pollMs ?? 1_000;
  const status = embeddedPostgresStatusProbe(options.dir);
  let current: EmbeddedPostgresHandle | null = null;
  return {
    name: "database",
    // Every other process waits for the database, and the console cannot act in an outage
    // without it, so it never waits half a minute to come back; its start costs about a second.
    backoff: { maxMs: DATABASE_MAX_RESTART_DELAY_MS },
    handle() {
      if (!current) throw new Error("the embedded PostgreSQL has not been started");
      return current;
    },
    async start(): Promise<ServiceRun> {
      const handle = await startEmbeddedPostgres({
        dir: options.dir,
        port: options.port,
        log: options.postgresLog,
      });
      current = handle;
      let over = false;
      let timer: NodeJS.Timeout | null = null;
      let finish: (ending: string) => void = () => {};
      const ended = new Promise<string>((resolve) => (finish = resolve));
      let unsure = false;
      const poll = async () => {
        const answer = await status();
        if (over) return;
        if (answer === "stopped") {
          over = true;
          finish(POSTGRES_GONE);
          return;
        }
        if (answer === "unknown" && !unsure) {
          options.log(
            `could not tell whether the embedded PostgreSQL is running (pg_ctl status gave no ` +
              `clear answer); not restarting it on that, asking again`,
          );
        }
        unsure = answer === "unknown";
        timer = setTimeout(() => void poll(), pollMs);
      };
      timer = setTimeout(() => void poll(), pollMs);
      return {
        ended,
        async stop() {
          if (over) return;
          over = true;
          if (timer) clearTimeout(timer);
          await handle.stop();
          finish("stopped");
        },
      };
    },
  };
}
