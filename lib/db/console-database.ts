import fs from "node:fs";
import path from "node:path";
import { dataDir } from "../config/paths";
import { embeddedPostgresUrl, startEmbeddedPostgres } from "./embedded-postgres";
import { migrateDatabase } from "./migrate";

/**
 * The console's database for a command-line tool run beside (or instead of) `npm start`:
 * `DATABASE_URL` when set; else the embedded PostgreSQL the running console started (found by
 * its pid file, so the tool never restarts the database under a running console); else the
 * embedded cluster started for the tool's duration. Migrated to this code's schema.
 */
export async function openConsoleDatabase(): Promise<{ url: string; close(): Promise<void> }> {
  const fromEnv = process.env.DATABASE_URL;
  if (fromEnv) {
    await migrateDatabase(fromEnv);
    return { url: fromEnv, close: async () => {} };
  }
  const dir = path.join(dataDir(), "postgres");
  const running = runningClusterPort(dir);
  if (running !== null) {
    const url = embeddedPostgresUrl(running, "clupilot");
    await migrateDatabase(url);
    return { url, close: async () => {} };
  }
  if (!fs.existsSync(path.join(dir, "PG_VERSION"))) {
    throw new Error(
      `No console database in ${dir}. Start the console once with \`npm start\`, or set ` +
        `DATABASE_URL / CLUPILOT_DATA_DIR to the console's.`,
    );
  }
  const pg = await startEmbeddedPostgres({
    dir,
    port: Number(process.env.CLUPILOT_PG_PORT ?? 54329),
  });
  const url = await pg.createDatabase("clupilot");
  await migrateDatabase(url);
  return { url, close: () => pg.stop() };
}

/** The port of a live postmaster on `dir` (its pid file: pid on line 1, port on line 4). */
function runningClusterPort(dir: string): number | null {
  let lines: string[];
  try {
    lines = fs.readFileSync(path.join(dir, "postmaster.pid"), "utf8").split("\n");
  } catch {
    return null;
  }
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || pid <= 0 || !Number.isInteger(port) || port <= 0) return null;
  try {
    process.kill(pid, 0);
    return port;
  } catch (error) {
    // EPERM: alive but owned by the postgres user (the console runs it so as root).
    return (error as NodeJS.ErrnoException).code === "EPERM" ? port : null;
  }
}
