import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from "@/lib/db/embedded-postgres";
import { createDb } from "@/lib/db/client";
import { startUntilEnd, stopAtEnd } from "./run-bench";

/**
 * An embedded Postgres of the bench's own, in a fresh temporary folder (`clupilot-bench-<name>-…`):
 * stopped (pg_ctl stop) and the folder deleted when the bench ends.
 */
export async function startBenchPostgres(name: string): Promise<EmbeddedPostgresHandle> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `clupilot-bench-${name}-`));
  stopAtEnd(`the folder ${dir}`, () => fs.rmSync(dir, { recursive: true, force: true }));
  // Run as root, the embedded Postgres runs as a `postgres` user, which must reach its folder.
  fs.chmodSync(dir, 0o755);
  return startUntilEnd(
    "embedded Postgres",
    startEmbeddedPostgres({ dir: path.join(dir, "db") }),
    (database) => database.stop(),
  );
}

/** A connection pool (createDb) ended when the bench ends, before its Postgres stops. */
export function openBenchDb(url: string, size: number): ReturnType<typeof createDb> {
  const opened = createDb(url, size);
  stopAtEnd("database pool", () => opened.pool.end());
  return opened;
}
