import crypto from "node:crypto";
import pg from "pg";
import { inject } from "vitest";

/**
 * A fresh database cloned from the migrated template, for one test file (or one test).
 * Returns its URL and a drop function.
 */
export async function createTestDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const baseUrl = inject("postgresUrl");
  const name = `clupilot_t_${crypto.randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  try {
    await admin.query(`create database "${name}" template clupilot_template`);
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
