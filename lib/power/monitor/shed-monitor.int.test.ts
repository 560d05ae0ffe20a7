import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { asc, eq } from "drizzle-orm";
import { runs } from "@/lib/db/schema";
import { updatePowerSettings } from "@/lib/power/operations/update-power-settings";
import { POWER_SHED, POWER_SHED_BACK } from "@/lib/power/shed-pipeline/pipeline";
import { POWER_SHUTDOWN } from "@/lib/power/shutdown-pipeline/pipeline";
import { startLabCluster, type LabCluster } from "@/lab";
import { startLabUps, type LabUps } from "@/lab/ups/lab-ups";
import { registerTestDatabase } from "@/test/db";
import { ADMIN, nutSourceOf, setModeConfirmingAll } from "@/test/fixtures/power";
import { protectLabCluster, startClusterTestWorker } from "@/test/fixtures/protected-lab-cluster";
import { settled } from "@/test/runs";
import { waitFor } from "@/test/worker-process";
import type { WorkerHandle } from "@/worker/runner";
import { startPowerMonitor, type PowerMonitor } from "./power-monitor";

/**
 * Early shedding end to end: the monitor in this process reads the lab UPS's NUT face (a real
 * protocol peer) every second, the real worker runs what it starts, a lab cluster's guests go
 * down and come back. The plug is pulled for real and the monitor's own monotonic clock counts
 * the minute; the main trigger is set far beyond it.
 */

const database = registerTestDatabase(6);
let worker: WorkerHandle;
let monitor: PowerMonitor | undefined;
let ups: LabUps | undefined;
let lab: LabCluster | undefined;
const lines: string[] = [];

beforeAll(async () => {
  const { db } = database;
  worker = await startClusterTestWorker(database, null);
  ups = await startLabUps({ name: "shedups", snmp: false });
  lab = await startLabCluster({
    nodes: 2,
    name: "shed-monitor",
    guests: [
      { vmid: 101, type: "qemu", node: "pve1", tags: "shed" },
      { vmid: 102, type: "qemu", node: "pve1" },
      { vmid: 111, type: "lxc", node: "pve2", tags: "backup;shed" },
    ],
    timing: { guestShutdownMs: 100, guestStartMs: 100 },
    apiAuthFailureDelayMs: 50,
  });
  await protectLabCluster(db, lab, { upsName: "shedups", upsSource: nutSourceOf(ups) });
  await updatePowerSettings(
    db,
    {
      // The main trigger stays far away: only the shed acts within these minutes.
      triggers: {
        lowBattery: true,
        runtimeBelowSeconds: null,
        chargeBelowPercent: null,
        onBatteryForSeconds: 3600,
        latchReleaseAfterStableMainsSeconds: 1,
      },
      shed: { enabled: true, afterMinutes: 1, tag: "shed" },
    },
    ADMIN,
  );
  await setModeConfirmingAll(db, "armed");
  monitor = await startPowerMonitor({
    connectionString: database.url,
    supervisorIntervalMs: 500,
    log: (line) => lines.push(line),
  });
}, 120_000);

afterAll(async () => {
  await monitor?.stop();
  await worker?.stop();
  await ups?.stop();
  await lab?.stop();
});

const runsOf = (pipeline: string) =>
  database.db
    .select({ id: runs.id })
    .from(runs)
    .where(eq(runs.pipeline, pipeline))
    .orderBy(asc(runs.createdAt), asc(runs.id));

const running = () =>
  [...lab!.model.guests.values()]
    .filter((g) => g.status === "running")
    .map((g) => g.vmid)
    .sort((a, b) => a - b);

describe("early shedding driven by the monitor", () => {
  it("a minute on battery by the monitor's clock sheds exactly the tagged guests, once; mains back starts exactly them again; nothing else is shut down", async () => {
    const { db } = database;
    await waitFor("the monitor reads the UPS on mains", async () =>
      lines.some((l) => l.includes("watching UPS shedups")),
    );
    const pulledAt = Date.now();
    ups!.control.pullPlug();
    const [shed] = await waitFor(
      "a shed run",
      async () => {
        const found = await runsOf(POWER_SHED);
        return found.length > 0 && found;
      },
      180_000,
      200,
    );
    // Never before the minute on battery, by the console's own clock.
    expect(Date.now() - pulledAt).toBeGreaterThanOrEqual(60_000);
    const run = await settled(db, shed!.id, 120_000);
    expect(run.status, run.failureReason ?? "").toBe("succeeded");
    expect(running()).toEqual([102]);

    ups!.control.restore();
    const [back] = await waitFor(
      "the shed guests' restart",
      async () => {
        const found = await runsOf(POWER_SHED_BACK);
        return found.length > 0 && found;
      },
      120_000,
      200,
    );
    const backRun = await settled(db, back!.id, 120_000);
    expect(backRun.status, backRun.failureReason ?? "").toBe("succeeded");
    expect(running()).toEqual([101, 102, 111]);
    expect(await runsOf(POWER_SHED)).toHaveLength(1);
    expect(await runsOf(POWER_SHED_BACK)).toHaveLength(1);
    expect(await runsOf(POWER_SHUTDOWN)).toEqual([]);
    for (const node of lab!.model.nodes) expect(node.online).toBe(true);
  }, 420_000);
});
