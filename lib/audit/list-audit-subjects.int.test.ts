import { describe, expect, it } from "vitest";
import { registerTestDatabase } from "@/test/db";
import { notificationTargets, planVersions, plans, upsDevices } from "@/lib/db/schema";
import { listAudit, ZAuditFilter } from "./list-audit";
import { recordAudit } from "./record-audit";

const testDatabase = registerTestDatabase(2);

/*
 * Issue 32, item 8: an audit row names the UPS, notification target, plan version or plan it
 * acted on by its name (hosts already were), with where to find it; a target whose subject is
 * gone, or that is no id at all, names nothing.
 */
describe("audit rows name what they acted on", () => {
  it("a UPS, a notification target, a plan and a plan version by name; a deleted one not", async () => {
    const { db } = testDatabase;
    const [ups] = await db
      .insert(upsDevices)
      .values({
        name: "rack-ups",
        source: { type: "nut", host: "127.0.0.1", port: 3493, upsName: "ups" },
      } as typeof upsDevices.$inferInsert)
      .returning();
    const [notify] = await db
      .insert(notificationTargets)
      .values({
        name: "pager",
        format: "json",
        sealedUrl: "sealed",
        urlOrigin: "https://example.invalid",
      } as typeof notificationTargets.$inferInsert)
      .returning();
    const [plan] = await db.insert(plans).values({ slug: "small", name: "Small" }).returning();
    const [version] = await db
      .insert(planVersions)
      .values({
        planId: plan!.id,
        version: 3,
        templateVmid: 9000,
        cores: 2,
        memoryMib: 2048,
        diskGib: 20,
      })
      .returning();
    const gone = "00000000-0000-4000-8000-00000000dead";
    const actor = { userId: null, name: "alice" };
    for (const [action, target] of [
      ["power.ups_update", `ups:${ups!.id}`],
      ["notify.target_update", `notify:${notify!.id}`],
      ["catalog.plan_create", `plan:${plan!.id}`],
      ["catalog.version_publish", `plan_version:${version!.id}`],
      ["power.ups_delete", `ups:${gone}`],
      ["power.target_delete", "power_target:not-a-uuid"],
    ] as const) {
      await recordAudit(db, { actor, action, target, outcome: "success" });
    }

    const page = await listAudit(db, ZAuditFilter.parse({}));
    const byTarget = Object.fromEntries(page.entries.map((e) => [e.target, e.subject]));
    expect(byTarget[`ups:${ups!.id}`]).toEqual({
      kind: "ups",
      name: "rack-ups",
      href: "/power/ups",
    });
    expect(byTarget[`notify:${notify!.id}`]).toEqual({
      kind: "notification-target",
      name: "pager",
      href: "/power/notifications",
    });
    expect(byTarget[`plan:${plan!.id}`]).toEqual({ kind: "plan", name: "Small", href: "/catalog" });
    expect(byTarget[`plan_version:${version!.id}`]).toEqual({
      kind: "plan-version",
      name: "Small v3",
      href: "/catalog",
    });
    expect(byTarget[`ups:${gone}`]).toBeNull();
    expect(byTarget["power_target:not-a-uuid"]).toBeNull();
  });
});
