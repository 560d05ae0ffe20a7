import path from "node:path";
import { migrate } from "drizzle-orm/node-postgres/migrator";
import { runMigrations } from "graphile-worker";
import pg from "pg";
import { createDb } from "./client";

/**
 * Key of the advisory lock migrations run under: web and worker machines starting together
 * (deploy/systemd) would otherwise apply the same migration at once, and drizzle's migrator
 * fails on the loser's duplicate `CREATE TYPE`. Any fixed number; only migrations take it.
 */
const MIGRATION_LOCK_KEY = 7_344_216_905;

/**
 * Applies the console's migrations and graphile-worker's own schema. Safe to run repeatedly and
 * from several processes at once: one applies, the others wait and then find nothing to do.
 */
export async function migrateDatabase(connectionString: string): Promise<void> {
  // A session lock on its own connection: it ends with the connection, even if we die.
  const lock = new pg.Client({ connectionString });
  await lock.connect();
  try {
    await lock.query("select pg_advisory_lock($1)", [MIGRATION_LOCK_KEY]);
    const { pool, db } = createDb(connectionString, 2);
    try {
      await migrate(db, { migrationsFolder: path.join(process.cwd(), "drizzle") });
      await runMigrations({ pgPool: pool });
    } finally {
      await pool.end();
    }
  } finally {
    await lock.end();
  }
}
