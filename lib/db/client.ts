import "server-only";
import { drizzle, type NodePgDatabase } from "drizzle-orm/node-postgres";
import pg from "pg";
import { processReachability, type Reachability } from "./reachability";
import * as schema from "./schema";

export type Database = NodePgDatabase<typeof schema>;
/** An open transaction of `Database` (what `db.transaction`'s callback receives). */
export type Transaction = Parameters<Parameters<Database["transaction"]>[0]>[0];

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

/**
 * A pool with its connection losses handled: `pg` emits 'error' for a client that loses its
 * connection while idle in the pool (a database restart), and an 'error' nobody listens to ends
 * the process. The next query simply connects anew; `reachability` hears of the loss and of the
 * next successful connection (one log line each, however many clients were dropped).
 */
export function createDb(
  connectionString: string,
  max = 10,
  reachability: Reachability = processReachability(),
): DbHandle {
  const pool = new pg.Pool({ connectionString, max });
  pool.on("error", (error) => reachability.lost(error));
  pool.on("connect", (client) => {
    reachability.answered();
    client.on("error", (error) => reachability.lost(error));
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
