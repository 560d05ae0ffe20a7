import crypto from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, inject } from "vitest";
import { createDb, type Database } from "@/lib/db/client";

/**
 * A fresh database cloned from the migrated template (or an `empty` one, with no migration
 * applied), for one test file (or one test). Returns its URL and a drop function.
 */
export async function createTestDatabase(
  options: { empty?: boolean } = {},
): Promise<{ url: string; drop(): Promise<void> }> {
  const baseUrl = inject("postgresUrl");
  const name = `clupilot_t_${crypto.randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  try {
    const template = options.empty ? "template0" : "clupilot_template";
    await admin.query(`create database "${name}" template ${template}`);
  } finally {
    await admin.end();
  }
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: baseUrl });
      await client.connect();
      try {
        await client.query(`drop database if exists "${name}" with (force)`);
      } finally {
        await client.end();
      }
    },
  };
}

/**
 * A fresh database with its own pool for one test file, for code that takes a `db` (unlike
 * registerProcessTestDatabase, which serves code reaching it through `getDb()`). Registers the
 * file's `beforeAll` (create, connect) and `afterAll` (close the pool, drop); call it at the top
 * of the file, before the file's own hooks. `db`, `pool` and `url` are there once they ran.
 */
export function registerTestDatabase(poolSize = 4): {
  readonly db: Database;
  readonly pool: pg.Pool;
  readonly url: string;
} {
  let opened: { url: string; drop(): Promise<void>; handle: ReturnType<typeof createDb> } | null =
    null;
  beforeAll(async () => {
    const database = await createTestDatabase();
    opened = { ...database, handle: createDb(database.url, poolSize) };
  });
  afterAll(async () => {
    if (!opened) return;
    await opened.handle.pool.end();
    await opened.drop();
  });
  const current = () => {
    if (!opened) throw new Error("the test database is not open yet: use it in a test or a hook");
    return opened;
  };
  return {
    get db() {
      return current().handle.db;
    },
    get pool() {
      return current().handle.pool;
    },
    get url() {
      return current().url;
    },
  };
}
