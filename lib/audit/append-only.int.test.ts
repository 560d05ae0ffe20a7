import { beforeAll, describe, expect, it } from "vitest";
import { registerTestDatabase } from "@/test/db";
import { recordAudit } from "./record-audit";

const testDatabase = registerTestDatabase(2);

beforeAll(async () => {
  await recordAudit(testDatabase.db, {
    actor: { userId: null, name: "alice" },
    action: "host.create",
    target: "host:1",
    outcome: "success",
  });
});

async function rows(): Promise<unknown[]> {
  return (await testDatabase.pool.query("select * from audit_log order by id")).rows;
}

describe("the audit log is append-only in the database", () => {
  it("refuses an UPDATE and leaves the row as it was", async () => {
    const before = await rows();
    await expect(
      testDatabase.pool.query("update audit_log set actor_name = 'mallory'"),
    ).rejects.toThrow(/append-only: UPDATE/);
    expect(await rows()).toEqual(before);
  });

  it("refuses a DELETE", async () => {
    await expect(testDatabase.pool.query("delete from audit_log")).rejects.toThrow(
      /append-only: DELETE/,
    );
    expect(await rows()).toHaveLength(1);
  });

  it("refuses a TRUNCATE", async () => {
    await expect(testDatabase.pool.query("truncate audit_log")).rejects.toThrow(
      /append-only: TRUNCATE/,
    );
    expect(await rows()).toHaveLength(1);
  });

  it("still accepts new entries", async () => {
    await recordAudit(testDatabase.db, {
      actor: { userId: null, name: "bob" },
      action: "run.abort",
      target: "run:2",
      outcome: "failure",
      detail: { reason: "The run has already ended." },
    });
    expect(await rows()).toHaveLength(2);
  });
});
