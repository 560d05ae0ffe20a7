import { drizzle, type NodePgDatabase } from "drizzle-orm/node-postgres";
import pg from "pg";
import * as schema from "./schema";

export type Database = NodePgDatabase<typeof schema>;

type DbHandle = { pool: pg.Pool; db: Database };

// Next.js dev reloads modules; keep one pool per process across reloads.
const globalForDb = globalThis as unknown as { __clupilotDb?: DbHandle };

export function databaseUrl(): string {
  const url = process.env.DATABASE_URL;
  if (!url) {
    throw new Error(
      "DATABASE_URL is not set. Start the console with `npm start` (it runs an embedded Postgres) " +
        "or set DATABASE_URL to a PostgreSQL connection string.",
    );
  }
  return url;
}

export function createDb(connectionString: string, max = 10): DbHandle {
  const pool = new pg.Pool({ connectionString, max });
  // An idle client losing its connection (database restart) must not crash the process;
  // the next query reconnects.
  pool.on("error", (error) => console.error(`database connection lost: ${error.message}`));
  pool.on("connect", (client) => {
    client.on("error", (error) => console.error(`database connection lost: ${error.message}`));
  });
  return { pool, db: drizzle(pool, { schema }) };
}

function handle(): DbHandle {
  globalForDb.__clupilotDb ??= createDb(databaseUrl());
  return globalForDb.__clupilotDb;
}

/** The process-wide database (web server and worker each have their own). */
export function getDb(): Database {
  return handle().db;
}

export function getPool(): pg.Pool {
  return handle().pool;
}

export { schema };
