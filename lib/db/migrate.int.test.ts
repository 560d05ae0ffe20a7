import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase } from "@/test/db";

const root = path.resolve(import.meta.dirname, "../..");
const journal = JSON.parse(
  fs.readFileSync(path.join(root, "drizzle", "meta", "_journal.json"), "utf8"),
) as { entries: { tag: string }[] };

/** `npm run db:migrate` as an install runs it: its own process, the database from the env. */
function dbMigrate(env: NodeJS.ProcessEnv): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "scripts/migrate.ts"], {
      cwd: root,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
    child.on("error", reject);
    child.on("exit", (code) => resolve({ code: code ?? -1, output }));
  });
}

let database: { url: string; drop(): Promise<void> };
beforeAll(async () => {
  database = await createTestDatabase({ empty: true });
});
afterAll(() => database.drop());

async function query<T extends pg.QueryResultRow>(text: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    return (await client.query<T>(text)).rows;
  } finally {
    await client.end();
  }
}

describe("npm run db:migrate", () => {
  it("started on several machines at once against an empty database, every run succeeds and each migration is applied once", async () => {
    const env = { ...process.env, DATABASE_URL: database.url };
    const results = await Promise.all([dbMigrate(env), dbMigrate(env), dbMigrate(env)]);
    for (const result of results) {
      expect(result.code, result.output).toBe(0);
      expect(result.output).toContain("[migrate] the database is up to date");
    }
    const applied = await query<{ count: number }>(
      "select count(*)::int as count from drizzle.__drizzle_migrations",
    );
    expect(applied[0]!.count).toBe(journal.entries.length);
    const tables = await query<{ name: string }>(
      "select to_regclass('public.runs')::text as name union all " +
        "select to_regclass('graphile_worker._private_jobs')::text",
    );
    expect(tables.map((t) => t.name)).toEqual(["runs", "graphile_worker._private_jobs"]);

    // Again on the migrated database: nothing to do, nothing applied twice.
    const again = await dbMigrate(env);
    expect(again.code, again.output).toBe(0);
    const reapplied = await query<{ count: number }>(
      "select count(*)::int as count from drizzle.__drizzle_migrations",
    );
    expect(reapplied[0]!.count).toBe(journal.entries.length);
  });

  it("without DATABASE_URL stops at once and says what to set", async () => {
    const env = { ...process.env };
    delete env.DATABASE_URL;
    const result = await dbMigrate(env);
    expect(result.code).toBe(1);
    expect(result.output).toContain("[migrate] failed: DATABASE_URL is not set");
  });
});
