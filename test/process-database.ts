import crypto from "node:crypto";
import { afterAll, beforeAll } from "vitest";
import { getPool } from "@/lib/db/client";
import { createTestDatabase } from "./db";

/**
 * A fresh database for one test file whose code under test reaches it the way production does:
 * route handlers and server actions call `getDb()`, which connects to `DATABASE_URL`. Registers
 * the file's first `beforeAll` (create it, point `DATABASE_URL` at it, give the process a secret
 * key for sealing credentials) and its last `afterAll` (close the pool, forget the cached
 * client so the next file connects anew, drop the database).
 *
 * Call at the top level of the test file, before the file's own hooks. The returned `url` is
 * set once the file's `beforeAll` hooks run (for code that takes a URL, e.g. a seeder).
 */
export function registerProcessTestDatabase(): { url: string } {
  const database = { url: "" };
  let drop: () => Promise<void> = async () => undefined;
  beforeAll(async () => {
    const created = await createTestDatabase();
    database.url = created.url;
    drop = created.drop;
    process.env.DATABASE_URL = created.url;
    process.env.CLUPILOT_SECRET_KEY ??= crypto.randomBytes(32).toString("hex");
  });
  afterAll(async () => {
    await getPool().end();
    delete (globalThis as { __clupilotDb?: unknown }).__clupilotDb;
    await drop();
  });
  return database;
}

/** The second argument Next.js passes to a dynamic route's handler. */
export const routeParams = <T>(value: T) => ({ params: Promise.resolve(value) });
