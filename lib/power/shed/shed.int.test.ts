import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { asc, eq } from "drizzle-orm";
import { powerBackGuests } from "@/lib/db/schema";
import { watchShedding } from "@/lib/power/monitor/shed-watch";
import { updatePowerSettings } from "@/lib/power/operations/update-power-settings";
import { actionsOfRun } from "@/lib/power/records/run-actions";
import { POWER_SHED, POWER_SHED_BACK } from "@/lib/power/shed-pipeline/pipeline";
import { startShedRun } from "@/lib/power/shed-pipeline/start-shed";
import { shedPageView } from "@/lib/power/queries/shed-view";
import { listPowerRuns, runTimeline } from "@/lib/power/queries/timeline";
import { registerTestDatabase } from "@/test/db";
import { ADMIN, persistOnBattery, persistOnMains } from "@/test/fixtures/power";
import { startClusterTestWorker } from "@/test/fixtures/protected-lab-cluster";
import { actionLabels, runningGuests, shedBench } from "@/test/fixtures/shed-lab";
import { settled } from "@/test/runs";
import type { WorkerHandle } from "@/worker/runner";

/**
 * Early load shedding (issue 30, item 7) through the real worker against lab clusters over real
 * HTTPS: the monitor's own decision (watchShedding, its clock injected) on the UPS state a
 * monitor persists, the power-shed and power-shed-back runs on the worker, the lab's guests
 * (test/fixtures/shed-lab.ts says which are marked how).
 */

const database = registerTestDatabase(6);
const bench = shedBench(database);
let worker: WorkerHandle;

const log: string[] = [];
const watch = (at = new Date()) => watchShedding(database.db, at, (line) => log.push(line));

beforeAll(async () => {
  worker = await startClusterTestWorker(database, null);
  await updatePowerSettings(
    database.db,
    {
      shed: { enabled: true, afterMinutes: 2, tag: "shed", guests: [{ node: "pve2", vmid: 112 }] },
    },
    ADMIN,
  );
}, 60_000);

afterAll(async () => {
  await worker?.stop();
  await bench.stop();
});

describe("early load shedding", () => {
  it("armed: a blip shorter than the threshold sheds nothing; past it exactly the tagged and listed guests go down once per outage, each read back stopped — and mains back before the main trigger starts exactly them again", async () => {
    const { db } = database;
    const { lab, upsId } = await bench.lab();
    await bench.setMode("armed");
    const t0 = new Date();
    const since = new Date();

    // One ms short of 2 minutes on battery (the monitor's monotonic clock): nothing.
    await persistOnBattery(db, upsId, { onBatteryMs: 119_999, since });
    await watch();
    expect(await bench.runsOf(POWER_SHED, t0)).toEqual([]);

    await persistOnBattery(db, upsId, { onBatteryMs: 120_000, since });
    await watch();
    await watch();
    const shed = await bench.runsOf(POWER_SHED, t0);
    expect(shed).toHaveLength(1);
    const run = await settled(db, shed[0]!, 120_000);
    expect(run.status, run.failureReason ?? "").toBe("succeeded");

    // Exactly 111 (tag, any case) and 112 (the list) stopped; 101 (HA) said why; the rest ran on.
    expect(runningGuests(lab)).toEqual([101, 102, 122]);
    const actions = await actionsOfRun(db, shed[0]!);
    expect(actionLabels(actions, /^shed /)).toEqual([
      ["shed qemu 101", "failed"],
      ["shed qemu 111", "ok"],
      ["shed qemu 112", "ok"],
    ]);
    expect(actions.find((a) => a.label === "shed qemu 101")!.detail).toMatch(/HA manages it/);
    const recorded = await db
      .select()
      .from(powerBackGuests)
      .where(eq(powerBackGuests.runId, shed[0]!))
      .orderBy(asc(powerBackGuests.vmid));
    expect(recorded.map((g) => [g.vmid, g.node, g.startupOrder, g.mode])).toEqual([
      [111, "pve2", 2, "armed"],
      [112, "pve2", 1, "armed"],
    ]);
    expect((await bench.eventsOf(shed[0]!)).map((e) => e.kind)).toEqual([
      "power.shed.started",
      "power.shed.done",
    ]);

    // The /power card, from what the run recorded.
    const view = (await shedPageView(db)).latest!;
    expect(view.runId).toBe(shed[0]);
    expect(view.guests.map((g) => [g.vmid, g.state])).toEqual([
      [101, "left-running"],
      [111, "shed"],
      [112, "shed"],
    ]);
    expect(view.verdict.tone).toBe("ok");
    expect(view.verdict.text).toMatch(
      /^shed 111, 112 after 2 min on battery \(each read back stopped\); left running: 101 \(HA manages it/,
    );

    // Its timeline on /power/runs: the nodes it shed on as lanes, the same one line.
    const timeline = (await runTimeline(db, shed[0]!))!;
    expect(timeline.run.kind).toBe("shed");
    expect(timeline.run.verdict).toEqual(view.verdict);
    expect(timeline.lanes).toEqual(["pve1", "pve2", "pve3"]);
    expect(timeline.run.origin).toEqual({
      kind: "shed",
      why: expect.stringMatching(/ on battery for 2 min$/),
    });

    // The same outage, later: no second shed.
    await persistOnBattery(db, upsId, { onBatteryMs: 300_000, since });
    await watch();
    expect(await bench.runsOf(POWER_SHED, t0)).toHaveLength(1);

    // Mains back (held for the trigger's confirmation) before the main trigger: exactly the
    // shed guests start again, in their startup order; the others are untouched.
    await persistOnMains(db, upsId, {
      mainsMs: 5000,
      chargePercent: 80,
      runtimeSeconds: 1200,
      rawStatus: "OL CHRG",
    });
    await watch();
    await watch();
    const back = await bench.runsOf(POWER_SHED_BACK, t0);
    expect(back).toHaveLength(1);
    const backRun = await settled(db, back[0]!, 120_000);
    expect(backRun.status, backRun.failureReason ?? "").toBe("succeeded");
    expect(runningGuests(lab)).toEqual([101, 102, 111, 112, 122]);
    expect(lab.model.guestStarts.map((s) => s.vmid)).toEqual([112, 111]);
    expect(actionLabels(await actionsOfRun(db, back[0]!), /^start /)).toEqual([
      ["start qemu 111", "ok"],
      ["start qemu 112", "ok"],
    ]);
    const backEvents = await bench.eventsOf(back[0]!);
    expect(backEvents.map((e) => e.kind)).toEqual(["power.shed.restarted"]);
    expect(backEvents[0]!.message).toContain("2 of 2 shed guest(s) running again");
    expect((await shedPageView(db)).latest!.verdict.text).toContain(
      "mains back before the main trigger: 2 of 2 running again",
    );
    const listed = (await listPowerRuns(db)).runs.find((r) => r.id === back[0]);
    expect(listed?.kind).toBe("shed-back");
    expect(listed?.verdict).toEqual({
      tone: "ok",
      text: "mains back before the main trigger: 2 of 2 running again",
    });
    await watch();
    expect(await bench.runsOf(POWER_SHED_BACK, t0)).toHaveLength(1);
  }, 240_000);

  it("dry-run: past the threshold the shed guests are recorded as would shut down and nothing is sent; mains back records would start", async () => {
    const { db } = database;
    const { lab, upsId } = await bench.lab();
    await bench.setMode("dry-run");
    const t0 = new Date();
    await persistOnBattery(db, upsId, { onBatteryMs: 125_000, since: new Date() });
    await watch();
    const shed = await bench.runsOf(POWER_SHED, t0);
    expect(shed).toHaveLength(1);
    const run = await settled(db, shed[0]!, 120_000);
    expect(run.status, run.failureReason ?? "").toBe("succeeded");
    expect(runningGuests(lab)).toEqual([101, 102, 111, 112, 122]);
    const actions = await actionsOfRun(db, shed[0]!);
    expect(actionLabels(actions, /^shed /)).toEqual([
      ["shed qemu 101", "failed"],
      ["shed qemu 111", "would-do"],
      ["shed qemu 112", "would-do"],
    ]);
    expect(actions.find((a) => a.label === "shed qemu 111")!.request).toMatch(
      /^POST https:\/\/.+\/nodes\/pve2\/qemu\/111\/status\/shutdown/,
    );
    const done = (await bench.eventsOf(shed[0]!)).at(-1)!;
    expect(done.kind).toBe("power.shed.done");
    expect(done.message).toContain("(dry-run): would shed 111, 112; nothing was sent");
    expect((await shedPageView(db)).latest!.verdict).toEqual({
      tone: "dry-run",
      text: expect.stringMatching(
        /^dry-run: would shed 111, 112 after 2 min on battery; nothing sent/,
      ),
    });

    await persistOnMains(db, upsId, {
      mainsMs: 5000,
      chargePercent: 80,
      runtimeSeconds: 1200,
      rawStatus: "OL",
    });
    await watch();
    const back = await bench.runsOf(POWER_SHED_BACK, t0);
    expect(back).toHaveLength(1);
    expect((await settled(db, back[0]!, 120_000)).status).toBe("succeeded");
    expect(actionLabels(await actionsOfRun(db, back[0]!), /^start /)).toEqual([
      ["start qemu 111", "would-do"],
      ["start qemu 112", "would-do"],
    ]);
    expect(lab.model.guestStarts).toEqual([]);
  }, 240_000);

  it("the main trigger latched while a shed is due: the shed sends nothing, its guests keep running", async () => {
    const { db } = database;
    const { lab, upsId, targets } = await bench.lab();
    await bench.setMode("armed");
    const since = new Date();
    await persistOnBattery(db, upsId, { onBatteryMs: 200_000, since, latched: true });
    // The monitor's own decision never starts it (row 2); a shed run already under way when
    // the trigger latches meets the latch at its next look: started here the way the monitor
    // starts one, with the latch already set, so the look is the first it takes.
    const t0 = new Date();
    await watch();
    expect(await bench.runsOf(POWER_SHED, t0)).toEqual([]);
    const started = await db.transaction((tx) =>
      startShedRun(
        tx,
        Object.values(targets).map((targetId) => ({
          targetId,
          outages: [`${upsId}@${since.toISOString()}`],
          why: "on battery for 2 min",
        })),
        new Date(),
      ),
    );
    const run = await settled(db, started!.runId, 120_000);
    expect(run.status, run.failureReason ?? "").toBe("succeeded");
    expect(run.context.outcome).toBe("main-trigger");
    expect(actionLabels(await actionsOfRun(db, started!.runId), /./)).toEqual([]);
    expect(runningGuests(lab)).toEqual([101, 102, 111, 112, 122]);
    const done = (await bench.eventsOf(started!.runId)).at(-1)!;
    expect(done.kind).toBe("power.shed.done");
    expect(done.message).toContain("the main trigger fired: the shutdown run took over");
  }, 120_000);
});
