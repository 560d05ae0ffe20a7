import "server-only";
import fs from "node:fs";
import path from "node:path";
import pg from "pg";
import { dataDir } from "@/lib/config/paths";
import { embeddedPostgresUrl, startEmbeddedPostgres } from "@/lib/db/embedded-postgres";
import { readStoredPassword } from "@/lib/db/embedded-postgres-credentials";

export type CliDatabase = { url: string; release(): Promise<void> };

/**
 * The database `npm start` uses, for a one-off command: DATABASE_URL if set; else the embedded
 * cluster under the data folder — the running one if `npm start` is up, otherwise started for
 * the command and stopped after it (`release`). Never starts a second server on a folder a
 * running console owns (that would stop the console's database).
 */
export async function openConsoleDatabase(say: (line: string) => void): Promise<CliDatabase> {
  if (process.env.DATABASE_URL) return { url: process.env.DATABASE_URL, release: async () => {} };
  const dir = path.join(dataDir(), "postgres");
  const port = Number(process.env.CLUPILOT_PG_PORT ?? 54329);
  if (!fs.existsSync(path.join(dir, "PG_VERSION"))) {
    throw new Error(
      `No console database in ${dir}. Run \`npm start\` once first (or set DATABASE_URL / CLUPILOT_DATA_DIR).`,
    );
  }
  // No password file yet: a cluster from before generated passwords, which starting it (below)
  // moves onto one.
  const url = readStoredPassword(dir) === null ? null : embeddedPostgresUrl(dir, port, "clupilot");
  if (url && (await reachable(url))) return { url, release: async () => {} };
  if (fs.existsSync(path.join(dir, "postmaster.pid"))) {
    throw new Error(
      `The embedded PostgreSQL in ${dir} looks running but does not answer on port ${port}. ` +
        "Set CLUPILOT_PG_PORT to the port `npm start` uses, or stop the console and try again" +
        (url ? "." : " (a console started before this version: restart it once)."),
    );
  }
  say(`starting the embedded PostgreSQL in ${dir} for this command`);
  const server = await startEmbeddedPostgres({ dir, port });
  return { url: embeddedPostgresUrl(dir, port, "clupilot"), release: () => server.stop() };
}

async function reachable(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}
