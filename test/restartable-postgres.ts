import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort, startEmbeddedPostgres } from "@/lib/db/embedded-postgres";
import { migrateDatabase } from "@/lib/db/migrate";

/**
 * A PostgreSQL of the test's own (not the shared one every file clones from), so the test can
 * take it away: stopped fast (`pg_ctl stop -m fast`: sessions are ended with 57P01) or the
 * postmaster killed (-9: sockets die mid-query), and started again on the same port and data.
 */
export type RestartablePostgres = {
  /** The migrated `clupilot` database. */
  url: string;
  stop(how: "fast" | "kill"): Promise<void>;
  start(): Promise<void>;
  /** Stops it for good and removes its data folder. */
  close(): Promise<void>;
};

export async function startRestartablePostgres(): Promise<RestartablePostgres> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "clupilot-restart-pg-"));
  fs.chmodSync(root, 0o755); // as root, Postgres runs as the postgres user, which needs to enter
  const dir = path.join(root, "db");
  const port = await freePort();
  let handle: Awaited<ReturnType<typeof startEmbeddedPostgres>> | null =
    await startEmbeddedPostgres({ dir, port });
  const url = await handle.createDatabase("clupilot");
  await migrateDatabase(url);

  const postmasterPid = () =>
    Number(fs.readFileSync(path.join(dir, "postmaster.pid"), "utf8").split("\n")[0]);
  const gone = (pid: number) => {
    try {
      process.kill(pid, 0);
      return false;
    } catch {
      return true;
    }
  };

  return {
    url,
    async stop(how) {
      const current = handle;
      handle = null;
      if (!current) return;
      if (how === "fast") return current.stop();
      const pid = postmasterPid();
      process.kill(pid, "SIGKILL");
      for (let i = 0; !gone(pid); i++) {
        if (i > 200) throw new Error(`postmaster ${pid} survived SIGKILL for 10 s`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    async start() {
      if (handle) return;
      // After a kill -9 its backends notice the postmaster's death and exit within moments; until
      // they have, the new postmaster refuses to start on their shared memory.
      for (let attempt = 1; ; attempt++) {
        try {
          handle = await startEmbeddedPostgres({ dir, port });
          return;
        } catch (error) {
          if (attempt >= 10) throw error;
          await new Promise((resolve) => setTimeout(resolve, 500));
        }
      }
    },
    async close() {
      await handle?.stop();
      handle = null;
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
}
