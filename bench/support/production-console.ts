import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort, startEmbeddedPostgres } from "@/lib/db/embedded-postgres";
import { migrateDatabase } from "@/lib/db/migrate";

const root = path.resolve(import.meta.dirname, "../..");

export type ProductionConsole = {
  /** The migrated database the server uses (the benchmark seeds and measures through it). */
  url: string;
  /** Where the server listens, e.g. http://127.0.0.1:41234. */
  base: string;
  /** The server's pid, which is also its process group (for CPU accounting). */
  serverPid: number;
  /** Ends the server's process group, stops Postgres and deletes the temporary directory. */
  stop(): Promise<void>;
};

/**
 * The console as it runs in production, for a benchmark: an embedded Postgres in a fresh
 * temporary directory (`clupilot-bench-<name>-…`), migrated, and the web server of the existing
 * build (scripts/web-server.ts) on a free port against it. The server runs detached in its own process group, so
 * `stop()` also ends whatever it spawned. The caller waits until it answers.
 */
export async function startProductionConsole(name: string): Promise<ProductionConsole> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `clupilot-bench-${name}-`));
  // Run as root, the embedded Postgres runs as a `postgres` user, which must reach its folder.
  fs.chmodSync(dir, 0o755);
  const database = await startEmbeddedPostgres({ dir: path.join(dir, "db") });
  const url = await database.createDatabase("clupilot");
  await migrateDatabase(url);
  const port = await freePort();
  // The console's own web server entry, as `npm start` runs it.
  const server = spawn(process.execPath, ["--import", "tsx", "scripts/web-server.ts"], {
    cwd: root,
    env: {
      ...process.env,
      DATABASE_URL: url,
      NODE_ENV: "production",
      PORT: String(port),
      HOSTNAME: "127.0.0.1",
    },
    stdio: "ignore",
    detached: true,
  });
  return {
    url,
    base: `http://127.0.0.1:${port}`,
    serverPid: server.pid!,
    async stop() {
      try {
        process.kill(-server.pid!, "SIGTERM");
      } catch {
        // already gone
      }
      await database.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Polls `answers` every 100 ms, `attempts` times at most, until the server answers. */
export async function waitUntilAnswering(
  answers: () => Promise<boolean>,
  attempts: number,
): Promise<void> {
  for (let i = 0; i < attempts; i++) {
    if (await answers()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
