import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "../..");
const SOURCE_DIRS = [
  "app",
  "components",
  "lib",
  "worker",
  "scripts",
  "bench",
  "lab",
  "test",
  "e2e",
];
/** The one file allowed to try a change: it proves the database refuses it. */
const ALLOWED = new Set(["lib/audit/append-only.int.test.ts", "lib/audit/no-change-path.test.ts"]);

const APPEND_ONLY_MIGRATION = "0005_audit_log_append_only.sql";

/**
 * What a change to audit rows looks like in our code: drizzle's `update(auditLog)` /
 * `delete(auditLog)` (any alias spelled with auditLog), and raw SQL naming the table after
 * UPDATE, DELETE FROM or TRUNCATE (quoted or not, schema-qualified or not).
 */
const CHANGE_PATTERNS = [
  /\.\s*(update|delete)\s*\(\s*(schema\.)?auditLog\b/,
  /\bupdate\s+("?public"?\.)?"?audit_log"?\b/i,
  /\bdelete\s+from\s+("?public"?\.)?"?audit_log"?\b/i,
  /\btruncate\s+(table\s+)?[^;]*"?audit_log"?\b/i,
  /\balter\s+table\s+("?public"?\.)?"?audit_log"?\s+(disable|drop)/i,
];

function sourceFiles(dir: string): string[] {
  const full = path.join(root, dir);
  if (!fs.existsSync(full)) return [];
  return fs
    .readdirSync(full, { recursive: true, encoding: "utf8" })
    .filter((file) => /\.(ts|tsx|mts|cts|js|mjs)$/.test(file))
    .map((file) => path.join(dir, file))
    .filter((file) => !file.split(path.sep).includes("node_modules"));
}

function changeSites(text: string): string[] {
  return text.split("\n").filter((line) => CHANGE_PATTERNS.some((pattern) => pattern.test(line)));
}

describe("the audit log has no update or delete path in the code", () => {
  it("recognises every spelling of a change (the scan can fail)", () => {
    for (const bad of [
      "await db.update(auditLog).set({ outcome: 'success' })",
      "await tx.delete( auditLog ).where(eq(auditLog.id, 1))",
      "db.update(schema.auditLog)",
      'await pool.query("UPDATE audit_log SET actor_name = $1")',
      'sql`delete from "audit_log" where id = ${id}`',
      "truncate table hosts, audit_log cascade",
      'ALTER TABLE "audit_log" DISABLE TRIGGER ALL',
    ]) {
      expect(changeSites(bad), bad).toHaveLength(1);
    }
    expect(changeSites("await db.insert(auditLog).values(row)")).toHaveLength(0);
    expect(changeSites("db.select().from(auditLog).orderBy(desc(auditLog.at))")).toHaveLength(0);
  });

  it("no TypeScript source updates, deletes or truncates audit_log", () => {
    const files = SOURCE_DIRS.flatMap(sourceFiles).filter((file) => !ALLOWED.has(file));
    expect(files.length).toBeGreaterThan(100);
    const offenders = files.flatMap((file) =>
      changeSites(fs.readFileSync(path.join(root, file), "utf8")).map(
        (line) => `${file}: ${line.trim()}`,
      ),
    );
    expect(offenders).toEqual([]);
  });

  it("no migration changes audit rows; 0005 installs the trigger that refuses it", () => {
    const dir = path.join(root, "drizzle");
    const migrations = fs.readdirSync(dir).filter((file) => file.endsWith(".sql"));
    const touching = migrations.filter(
      (file) =>
        file !== APPEND_ONLY_MIGRATION &&
        changeSites(fs.readFileSync(path.join(dir, file), "utf8")).length > 0,
    );
    expect(touching).toEqual([]);
    const trigger = fs.readFileSync(path.join(dir, APPEND_ONLY_MIGRATION), "utf8");
    expect(trigger).toMatch(/BEFORE UPDATE OR DELETE ON "audit_log"/);
    expect(trigger).toMatch(/BEFORE TRUNCATE ON "audit_log"/);
  });
});
