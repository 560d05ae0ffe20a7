import path from "node:path";
import { migrate } from "drizzle-orm/node-postgres/migrator";
import { runMigrations } from "graphile-worker";
import { createDb } from "./client";

/** Applies the console's migrations and graphile-worker's own schema. Safe to run repeatedly. */
export async function migrateDatabase(connectionString: string): Promise<void> {
  const { pool, db } = createDb(connectionString, 2);
  try {
    await migrate(db, { migrationsFolder: path.join(process.cwd(), "drizzle") });
    await runMigrations({ pgPool: pool });
  } finally {
    await pool.end();
  }
}
