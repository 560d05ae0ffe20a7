import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { createPowerTarget, updatePowerTarget } from "@/lib/power/operations/power-targets";
import { updatePowerSettings } from "@/lib/power/operations/update-power-settings";
import { registerTestDatabase } from "@/test/db";
import { seedHost, seedUps } from "@/test/power-seed";
import { applyWithPlanChange, previewPlanChange } from "./plan-change";

const database = registerTestDatabase();
const ADMIN = { userId: null, name: "plan-admin" };

async function traces() {
  const { rows } = await database.db.execute<{ audit: number; events: number; stages: string }>(sql`
    select (select count(*)::int from audit_log) as audit,
      (select count(*)::int from power_events) as events,
      (select coalesce(string_agg(stage::text, ',' order by id), '') from power_targets) as stages`);
  return rows[0]!;
}

describe("what a configuration change does to the plan", () => {
  it("previewing a change says what it would change and leaves no trace: no row, no audit entry, no event", async () => {
    const { db } = database;
    const ups = await seedUps(db, { name: "plan-ups" });
    const a = await seedHost(db, { name: "plan-a" });
    const b = await seedHost(db, { name: "plan-b" });
    const first = await createPowerTarget(
      db,
      { kind: "pve-node", hostId: a.id, feeds: [ups.id], feedPolicy: "any" },
      ADMIN,
    );
    const before = await traces();

    const adding = await previewPlanChange(db, (inside) =>
      createPowerTarget(
        inside,
        { kind: "pve-node", hostId: b.id, feeds: [ups.id], feedPolicy: "any", runsConsole: true },
        ADMIN,
      ),
    );
    expect(adding.changed).toBe(true);
    expect(adding.lines).toEqual(
      expect.arrayContaining([
        "plan-b: now under the plan",
        "plan-ups: plan-a ⇒ plan-a → plan-b (console)",
      ]),
    );
    expect(adding.lines.some((line) => /^plan-ups: budget .* ⇒ budget /.test(line))).toBe(true);

    const staging = await previewPlanChange(db, (inside) =>
      updatePowerTarget(inside, { id: first.id, stage: 3 }, ADMIN),
    );
    expect(staging.lines).toContain("plan-a: stage 0 ⇒ 3");
    const deadlines = await previewPlanChange(db, (inside) =>
      updatePowerSettings(inside, { shutdown: { callTimeoutSeconds: 30 } }, ADMIN),
    );
    expect(deadlines.lines.some((line) => line.startsWith("plan-ups: budget"))).toBe(true);

    expect(await traces()).toEqual(before);
  });

  it("a change that leaves the plan alone says so; an applied change is saved and described", async () => {
    const { db } = database;
    const nothing = await previewPlanChange(db, (inside) =>
      updatePowerSettings(inside, { pollIntervalMs: 2000 }, ADMIN),
    );
    expect(nothing).toEqual({ changed: false, lines: [] });

    const ups = await seedUps(db);
    const host = await seedHost(db, { name: "plan-applied" });
    const { result, planChange } = await applyWithPlanChange(db, (inside) =>
      createPowerTarget(
        inside,
        { kind: "pve-node", hostId: host.id, feeds: [ups.id], feedPolicy: "all" },
        ADMIN,
      ),
    );
    expect(result.name).toBe("plan-applied");
    expect(planChange.lines).toContain("plan-applied: now under the plan");
  });

  it("a refused change is refused in the preview too, and leaves no trace", async () => {
    const { db } = database;
    const before = await traces();
    await expect(
      previewPlanChange(db, (inside) =>
        updatePowerTarget(inside, { id: crypto.randomUUID(), stage: 1 }, ADMIN),
      ),
    ).rejects.toThrow(/does not exist/);
    expect(await traces()).toEqual(before);
  });
});
