import { describe, expect, it } from "vitest";
import { powerEvents, runs } from "@/lib/db/schema";
import { registerTestDatabase } from "@/test/db";
import { loadMessage } from "./load-message";
import { KNOWN_KINDS } from "./message";

const database = registerTestDatabase(2);

/*
 * Issue 32, item 7: a drill's notifications say DRILL first, in every format (they all render
 * the message's title and text); an outage's do not; titles are words, not event kinds; and
 * drill.started is a kind a target can choose.
 */
describe("a drill's messages", () => {
  it("carry the drill mark in title and text; an outage's run does not; titles are words", async () => {
    const { db } = database;
    const trigger = { upsName: "labups", trigger: "drill", reason: "drill" };
    const [drillRun, outageRun] = await db
      .insert(runs)
      .values([
        {
          pipeline: "power-shutdown",
          currentStep: "PlanShutdown",
          context: {
            input: {
              trigger,
              drill: { by: "alice", live: false, startedAt: new Date().toISOString() },
            },
          },
        },
        {
          pipeline: "power-shutdown",
          currentStep: "PlanShutdown",
          context: { input: { trigger: { ...trigger, trigger: "charge", reason: "charge 22 %" } } },
        },
      ])
      .returning();
    const event = async (kind: string, runId: string, message: string) => {
      const [row] = await db
        .insert(powerEvents)
        .values({ severity: "info", kind, runId, message })
        .returning();
      return loadMessage(db, {
        kind,
        severity: "info",
        powerEventId: row!.id,
        runEventId: null,
      });
    };

    const started = await event("drill.started", drillRun!.id, "drill of labups started by alice");
    expect(started?.title).toBe("DRILL — Drill started");
    expect(started?.text).toBe("DRILL — drill of labups started by alice");
    const would = await event(
      "shutdown.would_send",
      drillRun!.id,
      "pve1: would POST https://…/nodes/pve1/status command=shutdown (dry-run: nothing sent)",
    );
    expect(would?.title).toBe("DRILL — Shutdown would be sent (dry run)");
    expect(would?.text).toMatch(/^DRILL — pve1: would POST/);
    expect(would?.data.drill).toBe(true);

    const real = await event("shutdown.sent", outageRun!.id, "pve1: shutdown accepted");
    expect(real?.title).toBe("Shutdown sent");
    expect(real?.text).toBe("pve1: shutdown accepted");
    expect(real?.data.drill).toBeUndefined();

    expect(KNOWN_KINDS).toContain("drill.started");
  });
});
