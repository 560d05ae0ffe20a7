import { beforeAll, describe, expect, it } from "vitest";
import { runs } from "@/lib/db/schema";
import { registerTestDatabase } from "@/test/db";
import { actionsOfRun, recordInstantAction, startAction } from "./run-actions";

const database = registerTestDatabase();
let runId: string;

beforeAll(async () => {
  const [run] = await database.db
    .insert(runs)
    .values({
      pipeline: "power-shutdown",
      hostId: null,
      currentStep: "DisarmHa",
      status: "running",
    })
    .returning({ id: runs.id });
  runId = run!.id;
});

describe("power run actions", () => {
  it("a started action is committed open, and its end gives it an outcome", async () => {
    const { db } = database;
    const action = await startAction(db, {
      runId,
      lane: "cluster",
      label: "disarm HA",
      request: "POST a",
    });
    expect((await actionsOfRun(db, runId)).find((a) => a.id === action.id)).toMatchObject({
      outcome: null,
      finishedAt: null,
    });
    await action.finish({ outcome: "ok", detail: "read back" });
    const refused = await startAction(db, { runId, lane: "pve1", label: "shutdown pve1" });
    await refused.finish({ outcome: "failed", detail: "refused" });
    await recordInstantAction(db, {
      runId,
      lane: "pve2",
      label: "shutdown pve2",
      outcome: "would-do",
    });
    expect((await actionsOfRun(db, runId)).map((a) => [a.label, a.outcome, a.detail])).toEqual([
      ["disarm HA", "ok", "read back"],
      ["shutdown pve1", "failed", "refused"],
      ["shutdown pve2", "would-do", null],
    ]);
  });

  it("the same action started again while an earlier one is open ends that one as unknown (its worker stopped mid-call)", async () => {
    const { db } = database;
    const start = { runId, lane: "cluster", label: "set Ceph flags", request: "PUT flags" };
    const first = await startAction(db, start);
    const other = await startAction(db, { ...start, request: "PUT other cluster" });
    const again = await startAction(db, start);
    const actions = await actionsOfRun(db, runId);
    expect(actions.find((a) => a.id === first.id)).toMatchObject({
      outcome: "unknown",
      detail: expect.stringContaining("may have been sent"),
    });
    expect(actions.find((a) => a.id === other.id)!.finishedAt).toBeNull();
    expect(actions.find((a) => a.id === again.id)!.finishedAt).toBeNull();
  });
});
