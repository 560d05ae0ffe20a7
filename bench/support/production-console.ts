import path from "node:path";
import { freePort } from "@/lib/db/embedded-postgres";
import { migrateDatabase } from "@/lib/db/migrate";
import { startBenchPostgres } from "./postgres";
import { ensureProductionBuild } from "./production-build";
import { exitOf, spawnUntilEnd } from "./processes";

const root = path.resolve(import.meta.dirname, "../..");

export type ProductionConsole = {
  /** The migrated database the server uses (the benchmark seeds and measures through it). */
  url: string;
  /** Where the server listens, e.g. http://127.0.0.1:41234. */
  base: string;
  /** The server's pid, which is also its process group (for CPU accounting). */
  serverPid: number;
  /**
   * Polls `answers` every 100 ms until it is true. Throws when the server exits first (with
   * the end of what it printed) or has not answered within `seconds`.
   */
  waitUntilAnswering(answers: () => Promise<boolean>, seconds: number): Promise<void>;
};

/**
 * The console as it runs in production, for a benchmark: the production build (built first if
 * there is none), an embedded Postgres of its own, migrated, and the web server of that build
 * (scripts/web-server.ts) on a free port against it, in its own process group. All of it is
 * stopped when the bench ends (run-bench.ts). The caller waits until it answers.
 */
export async function startProductionConsole(name: string): Promise<ProductionConsole> {
  await ensureProductionBuild(root);
  const database = await startBenchPostgres(name);
  const url = await database.createDatabase("clupilot");
  await migrateDatabase(url);
  const port = await freePort();
  // The console's own web server entry, as `npm start` runs it.
  const server = spawnUntilEnd(
    "web server",
    process.execPath,
    ["--import", "tsx", "scripts/web-server.ts"],
    {
      cwd: root,
      env: {
        ...process.env,
        DATABASE_URL: url,
        NODE_ENV: "production",
        PORT: String(port),
        HOSTNAME: "127.0.0.1",
      },
      stdio: ["ignore", "ignore", "pipe"],
    },
  );
  let printed = "";
  server.stderr!.on("data", (chunk: Buffer) => (printed = (printed + chunk).slice(-2000)));
  let exit: number | string | null = null;
  void exitOf(server).then(
    (code) => (exit = code),
    (error: Error) => (exit = `not started: ${error.message}`),
  );
  return {
    url,
    base: `http://127.0.0.1:${port}`,
    serverPid: server.pid!,
    async waitUntilAnswering(answers, seconds) {
      const deadline = Date.now() + seconds * 1000;
      for (;;) {
        if (exit !== null) {
          throw new Error(`the web server exited (${exit}) before answering:\n${printed.trim()}`);
        }
        if (await answers()) return;
        if (Date.now() > deadline) {
          throw new Error(`the web server did not answer within ${seconds} s:\n${printed.trim()}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
  };
}
