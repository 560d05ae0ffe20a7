import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { and, asc, eq, inArray } from "drizzle-orm";
import { powerBackGuests } from "@/lib/db/schema";
import { watchPowerBack } from "@/lib/power/monitor/power-back-watch";
import { watchShedding } from "@/lib/power/monitor/shed-watch";
import { updatePowerSettings } from "@/lib/power/operations/update-power-settings";
import { outageToBringBack } from "@/lib/power/power-back-pipeline/start-power-back";
import { POWER_BACK } from "@/lib/power/power-back-pipeline/pipeline";
import { actionsOfRun } from "@/lib/power/records/run-actions";
import { POWER_SHED, POWER_SHED_BACK } from "@/lib/power/shed-pipeline/pipeline";
import { startShutdownRun } from "@/lib/power/shutdown-pipeline/start-shutdown-run";
import { registerTestDatabase } from "@/test/db";
import { ADMIN, persistOnBattery, persistOnMains, shutdownInput } from "@/test/fixtures/power";
import { startClusterTestWorker } from "@/test/fixtures/protected-lab-cluster";
import { actionLabels, runningGuests, shedBench } from "@/test/fixtures/shed-lab";
import { settled } from "@/test/runs";
import type { WorkerHandle } from "@/worker/runner";

/**
 * Early shedding, then the main trigger, then the way back — in a database of its own, so the
 * outage the way back undoes is this one alone: the shed guests went down early, the shutdown
 * took the rest, and the way back (BMCs powering the lab nodes on) starts them all.
 */

const database = registerTestDatabase(6);
const bench = shedBench(database);
let worker: WorkerHandle;

const watch = (at = new Date()) => watchShedding(database.db, at, () => {});

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

describe("early shedding and the way back", () => {
  it("main trigger after shedding: the shutdown proceeds, nothing is restarted early, and the way back later starts the shed guests with the rest", async () => {
    const { db } = database;
    const { lab, upsId, targets } = await bench.lab({ bmc: true });
    await bench.setMode("armed");
    await updatePowerSettings(
      db,
      { powerBack: { mainsStableMinutes: 1, minChargePercent: 50 } },
      ADMIN,
    );
    const t0 = new Date();
    const since = new Date();
    await persistOnBattery(db, upsId, { onBatteryMs: 120_000, since });
    await watch();
    const shed = await bench.runsOf(POWER_SHED, t0);
    expect(shed).toHaveLength(1);
    expect((await settled(db, shed[0]!, 120_000)).status).toBe("succeeded");
    expect(runningGuests(lab)).toEqual([101, 102, 122]);

    // The main trigger latches later in the same outage: the shutdown run takes every target.
    await persistOnBattery(db, upsId, { onBatteryMs: 150_000, since, latched: true });
    const shutdownRunId = await db.transaction((tx) =>
      startShutdownRun(tx, shutdownInput(upsId, Object.values(targets))),
    );
    const shutdown = await settled(db, shutdownRunId, 180_000);
    expect(shutdown.status, shutdown.failureReason ?? "").toBe("succeeded");
    for (const node of lab.model.nodes) expect(node.online).toBe(false);
    await watch();
    expect(await bench.runsOf(POWER_SHED, t0)).toHaveLength(1);

    // Mains back: the main shutdown took this outage — no early restart; the way back has the
    // shed run's guests and starts them with the others.
    await persistOnMains(db, upsId, {
      mainsMs: 60_000,
      chargePercent: 80,
      runtimeSeconds: 100_000,
      rawStatus: "OL CHRG",
    });
    await watch();
    expect(await bench.runsOf(POWER_SHED_BACK, t0)).toEqual([]);
    const outage = (await outageToBringBack(db, new Date()))!;
    expect(outage.shedRunIds).toEqual(shed);
    await watchPowerBack(db, new Date(), () => {});
    const ways = await bench.runsOf(POWER_BACK, t0);
    expect(ways).toHaveLength(1);
    const way = await settled(db, ways[0]!, 240_000);
    expect(way.status, way.failureReason ?? "").toBe("succeeded");
    expect(runningGuests(lab)).toEqual([101, 102, 111, 112, 122]);
    const started = actionLabels(await actionsOfRun(db, ways[0]!), /^start /);
    expect(started).toEqual([
      ["start lxc 102", "ok"],
      ["start lxc 122", "ok"],
      ["start qemu 101", "ok"],
      ["start qemu 111", "ok"],
      ["start qemu 112", "ok"],
    ]);
    // 112 went down by the shed: only the shed run recorded it.
    const by112 = await db
      .select({ runId: powerBackGuests.runId })
      .from(powerBackGuests)
      .where(
        and(
          eq(powerBackGuests.vmid, 112),
          inArray(powerBackGuests.runId, [...shed, shutdownRunId]),
        ),
      )
      .orderBy(asc(powerBackGuests.id));
    expect(by112.map((r) => r.runId)).toEqual(shed);
  }, 480_000);
});
