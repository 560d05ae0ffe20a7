import { asc, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { powerEvents, powerShutdownCalls, runs, upsMonitorState } from "@/lib/db/schema";
import { listPowerTargets } from "@/lib/power/operations/power-targets";
import { setPowerMode } from "@/lib/power/operations/set-power-mode";
import { POWER_SHUTDOWN } from "@/lib/power/shutdown-pipeline/pipeline";
import { updatePowerSettings } from "@/lib/power/operations/update-power-settings";
import { waitUntil, type LabNode } from "@/lab";
import { startLabUps, type LabUps } from "@/lab/ups/lab-ups";
import { registerTestDatabase } from "@/test/db";
import { addUps, ADMIN, nutSourceOf, onboardedLabNode, protectHost } from "@/test/fixtures/power";
import { settled } from "@/test/runs";
import { spawnWorker, waitFor, type WorkerProcess } from "@/test/worker-process";

/**
 * Real worker processes, each with graphile-worker and the power monitor, against the lab UPS
 * (NUT) and lab nodes: a worker killed with SIGKILL while on battery loses nothing — the next
 * one takes the UPS's lease once it expired, continues the console's on-battery clock and the
 * latch from the database, and every target gets exactly one accepted shutdown call (the one
 * interrupted by a kill is sent again unless its node is seen down). (How fast the
 * lease moves is measured by `npm run bench:power`, not asserted here.)
 */

const database = registerTestDatabase(4);
const workers: WorkerProcess[] = [];
let ups: LabUps;
let upsId: string;
const nodes: LabNode[] = [];

async function spawnPowerWorker(): Promise<{ worker: WorkerProcess; ownerId: string }> {
  const worker = await spawnWorker({ DATABASE_URL: database.url }, "test/fixtures/power-worker.ts");
  workers.push(worker);
  const ownerId = /ready \d+ (\S+)/.exec(worker.output())![1]!;
  return { worker, ownerId };
}

function kill9(worker: WorkerProcess): Promise<void> {
  return new Promise((resolve) => {
    worker.child.once("exit", () => resolve());
    process.kill(worker.pid, "SIGKILL");
  });
}

const stateRow = async () => {
  const [row] = await database.db
    .select()
    .from(upsMonitorState)
    .where(eq(upsMonitorState.upsId, upsId));
  return row;
};
const posts = (node: LabNode) => node.api.requests.filter((r) => r.method === "POST");

beforeAll(async () => {
  const { db } = database;
  // A worker for the onboarding of the lab nodes; it watches the UPS once there is one.
  const first = await spawnPowerWorker();
  ups = await startLabUps({ name: "rack-a", snmp: false });
  upsId = await addUps(db, "rack-a", nutSourceOf(ups));
  const one = await onboardedLabNode(db, "pve-one");
  const two = await onboardedLabNode(db, "pve-two");
  nodes.push(one.node, two.node);
  await protectHost(db, one.hostId, { feeds: [upsId] });
  await protectHost(db, two.hostId, { feeds: [upsId], runsConsole: true });
  await updatePowerSettings(
    db,
    {
      triggers: { onBatteryForSeconds: 10 },
      shutdown: { callTimeoutSeconds: 3, targetDownSeconds: 30 },
    },
    ADMIN,
  );
  const ids = (await listPowerTargets(db)).map((t) => t.id);
  await setPowerMode(db, { mode: "armed", confirmedTargetIds: ids }, ADMIN);
  await waitFor("the first worker to hold the UPS's lease", async () => {
    const row = await stateRow();
    return row?.leaseOwner === first.ownerId && row.lastReading !== null;
  });
}, 180_000);

afterAll(async () => {
  await Promise.all(workers.map((worker) => worker.stop()));
  await Promise.all([ups?.stop(), ...nodes.map((node) => node.stop())]);
});

describe("the power monitor across worker crashes", () => {
  it("a worker killed on battery: the next takes over, keeps the clock and latch, and each target gets exactly one accepted call", async () => {
    const { db } = database;
    const [a] = workers as [WorkerProcess];
    const b = await spawnPowerWorker();

    ups.control.pullPlug();
    const onBattery = await waitFor("the outage persisted by worker A", async () => {
      const row = await stateRow();
      return row?.onBatterySince && row;
    });
    const clockStart = onBattery.onBatterySince!.getTime();
    // What A counted before it died (its monotonic clock): B must go on from there, not from 0.
    const countedByA = await waitFor("A to count time on battery", async () => {
      const ms = (await stateRow())?.durations.onBatteryMs ?? 0;
      return ms >= 1000 && ms;
    });
    await kill9(a);
    await waitFor(
      "worker B to take the lease",
      async () => (await stateRow())?.leaseOwner === b.ownerId,
      15_000,
      50,
    );
    const firstOfB = await waitFor("B's first reading", async () => {
      const row = await stateRow();
      return row?.leaseOwner === b.ownerId && row.durations.onBatteryMs !== countedByA && row;
    });
    expect(firstOfB.durations.onBatteryMs!).toBeGreaterThan(countedByA);

    // B continues the console's clock from A's transition: the trigger fires once the time on
    // battery A and B counted together reaches 10 s.
    const fired = await waitFor(
      "the on-battery trigger",
      async () => {
        const row = await stateRow();
        return row?.latchedAt && row;
      },
      30_000,
    );
    expect(fired.latchedTrigger).toBe("on_battery_for");
    expect(fired.onBatterySince!.getTime()).toBe(clockStart);
    expect(fired.latchedAt!.getTime() - clockStart).toBeGreaterThanOrEqual(10_000);

    // Kill B as soon as the first call has reached its target; C finishes the run.
    await waitUntil(() => posts(nodes[0]!).length > 0, {
      timeoutMs: 15_000,
      what: "the first call",
    });
    await kill9(b.worker);
    const c = await spawnPowerWorker();
    await waitFor(
      "worker C to take the lease",
      async () => (await stateRow())?.leaseOwner === c.ownerId,
      15_000,
    );

    const powerRuns = await db.select().from(runs).where(eq(runs.pipeline, POWER_SHUTDOWN));
    expect(powerRuns).toHaveLength(1);
    await settled(db, powerRuns[0]!.id, 90_000);
    await waitUntil(() => nodes.every((node) => node.power.state === "down"), {
      timeoutMs: 15_000,
      what: "both nodes down",
    });
    // C read the latch from the database: no second trigger, no second run; one accepted call
    // each. The call B was killed in the middle of may have arrived: C sends it again unless the
    // node is already seen down (a second shutdown to a node going down is harmless; a node
    // left up loses power hard).
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const fires = await db
      .select()
      .from(powerEvents)
      .where(eq(powerEvents.kind, "trigger.fired"))
      .orderBy(asc(powerEvents.id));
    expect(fires).toHaveLength(1);
    expect(await db.select().from(runs).where(eq(runs.pipeline, POWER_SHUTDOWN))).toHaveLength(1);
    const calls = await db.select().from(powerShutdownCalls).orderBy(asc(powerShutdownCalls.id));
    const first = calls.filter((c) => c.targetId === calls[0]!.targetId);
    const last = calls.filter((c) => c.targetId !== calls[0]!.targetId);
    // The console's host: accepted at most once and the node seen down. Usually C's own call;
    // under load it may answer after the 3-s call timeout (the attempt settled failed, sent
    // again until the node is seen down, each attempt its own row), and B may already have
    // begun it before the kill reached B (that attempt's outcome unknown, sent again by C).
    const lastCalls = JSON.stringify(last.map((c) => [c.attempt, c.state, c.detail]));
    expect(last.filter((c) => c.state === "sent").length, lastCalls).toBeLessThanOrEqual(1);
    expect(
      last.some((c) => c.seenDownAt !== null),
      lastCalls,
    ).toBe(true);
    expect(
      last.every((c) => c.state === "sent" || c.state === "failed" || c.state === "unknown"),
      lastCalls,
    ).toBe(true);
    // Each POST is an attempt; one sent once the node was down is refused, never heard.
    expect(posts(nodes[1]!).length, lastCalls).toBeGreaterThan(0);
    expect(posts(nodes[1]!).length, lastCalls).toBeLessThanOrEqual(last.length);
    // Whether C got there before the node went down decides whether it sent it again.
    expect(first.filter((c) => c.state === "sent").length).toBeLessThanOrEqual(1);
    expect(first.some((c) => c.seenDownAt !== null)).toBe(true);
    const firstCalls = JSON.stringify(first.map((c) => [c.attempt, c.state, c.detail]));
    // Each POST is an attempt (one sent once the node was down is refused, never heard).
    expect(posts(nodes[0]!).length, firstCalls).toBeLessThanOrEqual(first.length);
    // Every call of it but the accepted one is the interrupted one (outcome unknown) — or, on a
    // machine so busy the node answered after the call timeout, a failed attempt sent again.
    expect(
      first
        .filter((c) => c.state !== "sent")
        .every((c) => c.state === "unknown" || c.state === "failed"),
      firstCalls,
    ).toBe(true);
    // The console's host last.
    expect(posts(nodes[0]!)[0]!.at.getTime()).toBeLessThan(posts(nodes[1]!)[0]!.at.getTime());
  }, 150_000);
});
