import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDb, type Database } from "@/lib/db/client";
import { createTestDatabase } from "@/test/db";
import { recordAudit } from "./record-audit";

let drop: () => Promise<void>;
let pool: pg.Pool;
let db: Database;

beforeAll(async () => {
  const database = await createTestDatabase();
  drop = database.drop;
  ({ pool, db } = createDb(database.url, 2));
  await recordAudit(db, {
    actor: { userId: null, name: "alice" },
    action: "host.create",
    target: "host:1",
    outcome: "success",
  });
});

afterAll(async () => {
  await pool.end();
  await drop();
});

async function rows(): Promise<unknown[]> {
  return (await pool.query("select * from audit_log order by id")).rows;
}

describe("the audit log is append-only in the database", () => {
  it("refuses an UPDATE and leaves the row as it was", async () => {
    const before = await rows();
    await expect(pool.query("update audit_log set actor_name = 'mallory'")).rejects.toThrow(
      /append-only: UPDATE/,
    );
    expect(await rows()).toEqual(before);
  });

  it("refuses a DELETE", async () => {
    await expect(pool.query("delete from audit_log")).rejects.toThrow(/append-only: DELETE/);
    expect(await rows()).toHaveLength(1);
  });

  it("refuses a TRUNCATE", async () => {
    await expect(pool.query("truncate audit_log")).rejects.toThrow(/append-only: TRUNCATE/);
    expect(await rows()).toHaveLength(1);
  });

  it("still accepts new entries", async () => {
    await recordAudit(db, {
      actor: { userId: null, name: "bob" },
      action: "run.abort",
      target: "run:2",
      outcome: "failure",
      detail: { reason: "The run has already ended." },
    });
    expect(await rows()).toHaveLength(2);
  });
});
