import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { desc, eq } from "drizzle-orm";
import { powerClusters, powerEvents, upsMonitorState } from "@/lib/db/schema";
import { readLogTail } from "@/lib/logs/read";
import { actionsOfRun, type PowerRunAction } from "@/lib/power/records/run-actions";
import { loadClusterGroups } from "@/lib/power/clusters/load-cluster-groups";
import { setClusterPolicy } from "@/lib/power/operations/set-cluster-policy";
import { startDueShutdowns } from "@/lib/power/monitor/start-due-shutdowns";
import type { ShutdownInput } from "@/lib/power/shutdown/shutdown-plan";
import type { Latch, StageLatch } from "@/lib/power/triggers/state";
import { startLabCluster, type LabCluster } from "@/lab";
import type { LabGuestSpec } from "@/lab/pve/cluster/model";
import { registerTestDatabase } from "@/test/db";
import { ADMIN, persistReading, setModeConfirmingAll } from "@/test/fixtures/power";
import { runRow, settled } from "@/test/runs";
import { SHUTDOWN_CANCELLED } from "@/lib/power/shutdown/shut-down-targets";
import type { WorkerHandle } from "@/worker/runner";
import { protectLabCluster, startClusterTestWorker } from "@/test/fixtures/protected-lab-cluster";
import { waitFor } from "@/test/worker-process";
import { DEFAULT_CONSOLIDATE_SETTINGS } from "@/lib/power/clusters/schemas";
import { mainsBackAfterFirstStage } from "./mains-back";
import { stageThresholdsByUps } from "./thresholds";

/**
 * Consolidate against a non-Ceph three-node lab cluster over real HTTPS, driven the way the
 * monitor drives it: a UPS's persisted state with a first-stage latch (then the trigger's
 * latch) and `startDueShutdowns` in a transaction, as the monitor's reading does. The console
 * runs in guest 390 on pve3, so pve3 is the node that stays.
 */

const database = registerTestDatabase(6);
let worker: WorkerHandle;
const labs: LabCluster[] = [];
const CONSOLE_GUEST = { node: "pve3", vmid: 390 };

const GUESTS: LabGuestSpec[] = [
  { vmid: 101, type: "qemu", node: "pve1", storage: "nfs", ha: true },
  { vmid: 102, type: "lxc", node: "pve1", storage: "nfs" },
  { vmid: 201, type: "qemu", node: "pve2", storage: "nfs" },
  { vmid: 202, type: "qemu", node: "pve2", storage: "nfs", status: "stopped" },
  { vmid: 301, type: "qemu", node: "pve3", storage: "nfs" },
  { vmid: CONSOLE_GUEST.vmid, type: "qemu", node: "pve3", storage: "local", name: "clupilot" },
];

let counter = 0;

async function consolidatingCluster(
  options: { guests?: LabGuestSpec[]; nodeMemoryMiB?: Record<string, number> } = {},
) {
  const { db } = database;
  const lab = await startLabCluster({
    nodes: 3,
    name: `cons-${++counter}`,
    guests: options.guests ?? GUESTS,
    ...(options.nodeMemoryMiB ? { nodeMemoryMiB: options.nodeMemoryMiB } : {}),
    // Short lab times; each wait below is the sequence's own order, not the lab's clock.
    timing: {
      guestShutdownMs: 100,
      haDisarmMs: 100,
      haRecoveryMs: 100,
      nodeShutdownDelayMs: 100,
      migrateMs: 300,
    },
    apiAuthFailureDelayMs: 50,
  });
  labs.push(lab);
  const { upsId, targets } = await protectLabCluster(db, lab);
  const [group] = (await loadClusterGroups(db)).filter((g) => g.name === lab.name);
  await setClusterPolicy(db, { id: group!.id, policy: "consolidate" }, ADMIN);
  return { lab, upsId, targets, clusterId: group!.id };
}

type Setup = Awaited<ReturnType<typeof consolidatingCluster>>;

async function setMode(mode: "armed" | "dry-run") {
  await setModeConfirmingAll(database.db, mode);
}

const firstStage = (at: Date): StageLatch => ({
  trigger: "runtime",
  at,
  reason: "runtime 14 min 0 s is below 15 min 0 s",
});
const trigger = (at: Date): Latch => ({
  trigger: "runtime",
  at,
  reason: "runtime 4 min 0 s is below 5 min 0 s",
  reading: null,
});

/** What the monitor does with a reading: the state written, then the due runs started. */
async function monitorReading(
  setup: Setup,
  latches: { stages: Record<string, StageLatch>; latch: Latch | null },
  onBattery = true,
): Promise<string | null> {
  const { db } = database;
  await persistReading(db, setup.upsId, onBattery);
  await db
    .update(upsMonitorState)
    .set({
      consolidateLatches: Object.fromEntries(
        Object.entries(latches.stages).map(([id, l]) => [
          id,
          { trigger: l.trigger, at: l.at.toISOString(), reason: l.reason },
        ]),
      ),
      latchedTrigger: latches.latch?.trigger ?? null,
      latchedAt: latches.latch?.at ?? null,
      latchedReason: latches.latch?.reason ?? null,
    })
    .where(eq(upsMonitorState.upsId, setup.upsId));
  const started = await db.transaction((tx) =>
    startDueShutdowns(tx, {
      id: setup.upsId,
      name: "ups-test",
      latch: latches.latch,
      stages: latches.stages,
    }),
  );
  return started?.runId ?? null;
}

async function finished(runId: string) {
  const { db } = database;
  const run = await settled(db, runId, 120_000).catch(async (error: unknown) => {
    const tail = (await readLogTail(db, runId, 40)).map((l) => l.text).join("\n");
    const row = await runRow(db, runId);
    throw new Error(
      `${String(error)} (at ${row.currentStep}, visit ${row.stepVisit}, ${row.errorCount} error(s), phase ${row.phase})\nthe run's log ends:\n${tail}`,
    );
  });
  const actions = await actionsOfRun(db, runId);
  const log = (await readLogTail(db, runId, 500)).map((l) => l.text).join("\n");
  return { run, actions, log, input: (run.context as { input: ShutdownInput }).input };
}

const find = (actions: PowerRunAction[], label: string) => {
  const action = actions.find((a) => a.label === label);
  if (!action) throw new Error(`no action '${label}' in ${actions.map((a) => a.label).join(", ")}`);
  return action;
};

const sent = (lab: LabCluster) =>
  lab.nodes.flatMap((n) =>
    n.api.requests.filter((r) => r.method !== "GET").map((r) => ({ node: n.name, ...r })),
  );

beforeAll(async () => {
  worker = await startClusterTestWorker(database, CONSOLE_GUEST);
}, 60_000);

afterAll(async () => {
  await worker?.stop();
  for (const lab of labs) await lab.stop();
});

describe("consolidate", () => {
  it("first threshold: guests migrated to the node that stays, read back there, the others off in order; final threshold: the last node goes down the ordinary way", async () => {
    const setup = await consolidatingCluster();
    const { lab, targets, clusterId } = setup;
    await setMode("armed");
    try {
      const t1 = new Date(Date.now() - 1000);
      const stages = { [clusterId]: firstStage(t1) };
      const first = await finished((await monitorReading(setup, { stages, latch: null }))!);
      expect(first.run.status, first.run.failureReason ?? "").toBe("succeeded");
      // The run took the nodes that go, due since the first threshold; never pve3.
      expect(first.input.targets.map((t) => t.targetId).sort()).toEqual(
        [targets.pve1, targets.pve2].sort(),
      );
      expect(first.input.targets.every((t) => t.dueSince === t1.toISOString())).toBe(true);

      // Every running guest of pve1 and pve2 runs on pve3 now; the stopped one was left alone.
      for (const vmid of [101, 102, 201, 301, CONSOLE_GUEST.vmid]) {
        expect(lab.model.guests.get(vmid)).toMatchObject({ node: "pve3", status: "running" });
      }
      expect(lab.model.guests.get(202)).toMatchObject({ node: "pve2", status: "stopped" });
      expect(lab.model.node("pve1")!.online).toBe(false);
      expect(lab.model.node("pve2")!.online).toBe(false);
      expect(lab.model.node("pve3")!.online).toBe(true);
      expect(lab.model.armedState).toBe("disarmed");

      // The calls: a VM live, a container restarted, all to pve3; then pve1 before pve2.
      const migrations = sent(lab).filter((r) => r.path.endsWith("/migrate"));
      expect(migrations.map((r) => [r.path.replace("/api2/json", ""), r.body]).sort()).toEqual([
        ["/nodes/pve1/lxc/102/migrate", { target: "pve3", restart: "1" }],
        ["/nodes/pve1/qemu/101/migrate", { target: "pve3", online: "1" }],
        ["/nodes/pve2/qemu/201/migrate", { target: "pve3", online: "1" }],
      ]);
      expect(find(first.actions, "check consolidation")).toMatchObject({ outcome: "ok" });
      const moved = find(first.actions, "migrate guests");
      expect(moved).toMatchObject({
        outcome: "ok",
        detail: "read back: 3 guest(s) running on pve3",
      });
      const shutdowns = first.actions.filter((a) => /^shutdown pve\d$/.test(a.label));
      expect(shutdowns.map((a) => a.label)).toEqual(["shutdown pve1", "shutdown pve2"]);
      expect(moved.finishedAt!.getTime()).toBeLessThanOrEqual(shutdowns[0]!.startedAt.getTime());
      expect(find(first.actions, "pve1 goes down").finishedAt!.getTime()).toBeLessThanOrEqual(
        shutdowns[1]!.startedAt.getTime(),
      );
      expect(first.log).toContain(
        "consolidation can work: migrate 3 guest(s) from pve1, pve2 to pve3",
      );

      // Another reading while the first stage holds starts nothing: every node is covered.
      expect(await monitorReading(setup, { stages, latch: null })).toBeNull();
      // The monitor decides this cluster's first threshold on the UPS that feeds it.
      expect((await stageThresholdsByUps(database.db)).get(setup.upsId)).toEqual([
        {
          clusterId,
          name: lab.name,
          firstThreshold: DEFAULT_CONSOLIDATE_SETTINGS.firstThreshold,
        },
      ]);
      // Were the mains back now, the nodes down since the first stage are named.
      const [back] = await database.db.transaction((tx) =>
        mainsBackAfterFirstStage(tx, { id: setup.upsId, name: "ups-test" }, stages),
      );
      expect(back!.message).toMatch(
        /mains back after the first stage of cluster cons-\d+: pve1, pve2 were shut down at the first threshold and stay down — nothing powers them on again .*; pve3 kept running/,
      );

      // The trigger: only pve3 is left to go, and it goes down the ordinary way.
      const final = await finished(
        (await monitorReading(setup, { stages, latch: trigger(new Date()) }))!,
      );
      expect(final.run.status, final.run.failureReason ?? "").toBe("succeeded");
      expect(final.input.targets.map((t) => t.targetId)).toEqual([targets.pve3]);
      expect(final.input.stages).toBeUndefined();
      expect(final.log).toContain(
        "consolidate, final stage: pve1, pve2 went down at the first threshold and stay down",
      );
      expect(find(final.actions, "disarm HA")).toMatchObject({
        outcome: "ok",
        detail: "read back: armed-state disarmed (since the first stage of consolidating)",
      });
      expect(find(final.actions, "stop guests").outcome).toBe("ok");
      expect(lab.model.node("pve3")!.online).toBe(false);
      // Exactly one shutdown per node in this outage.
      const nodeShutdowns = sent(lab).filter((r) => /\/nodes\/pve\d\/status$/.test(r.path));
      expect(nodeShutdowns.map((r) => r.node).sort()).toEqual(["pve1", "pve2", "pve3"]);
      expect(await monitorReading(setup, { stages, latch: trigger(new Date()) })).toBeNull();
    } finally {
      await setMode("dry-run");
    }
  }, 180_000);

  it("a check that fails (guest on local storage, not enough memory on pve3) does nothing at the first threshold, says why, and the whole cluster goes down as one unit at the final", async () => {
    const setup = await consolidatingCluster({
      guests: [
        ...GUESTS.filter((g) => g.vmid !== 201),
        { vmid: 201, type: "qemu", node: "pve2", storage: "local", memoryMiB: 8192 },
      ],
      nodeMemoryMiB: { pve1: 65_536, pve2: 65_536, pve3: 12_288 },
    });
    const { lab, targets, clusterId } = setup;
    await setMode("armed");
    try {
      const stages = { [clusterId]: firstStage(new Date(Date.now() - 1000)) };
      const first = await finished((await monitorReading(setup, { stages, latch: null }))!);
      expect(first.run.status, first.run.failureReason ?? "").toBe("succeeded");
      const check = find(first.actions, "check consolidation");
      expect(check.outcome).toBe("failed");
      expect(first.log).toMatch(/not enough memory: .* need 12\.0 GiB; pve3 has \d+\.\d GiB free/);
      expect(first.log).toMatch(
        /qemu 201 \(vm201\) on pve2 has scsi0 on local \(dir, local to pve2\): it cannot be migrated live/,
      );
      expect(first.log).toMatch(
        /NOT consolidating — it cannot work: .*whole cluster goes down as one unit at the final threshold/,
      );
      const [event] = await database.db
        .select()
        .from(powerEvents)
        .where(eq(powerEvents.kind, "consolidate.fell_back"))
        .orderBy(desc(powerEvents.id))
        .limit(1);
      expect(event!.runId).toBe(first.run.id);
      // Nothing but reads went out; every node is up, every guest where it was.
      expect(sent(lab)).toEqual([]);
      for (const node of lab.model.nodes) expect(node.online).toBe(true);
      // The check is kept for the cluster card.
      const [row] = await database.db
        .select({ check: powerClusters.consolidateCheck })
        .from(powerClusters)
        .where(eq(powerClusters.id, clusterId));
      expect(row!.check).toMatchObject({ verdict: "failed", remainingNode: "pve3" });

      // Handed back: no new first stage while its latch holds; the trigger takes all three.
      expect(await monitorReading(setup, { stages, latch: null })).toBeNull();
      const final = await finished(
        (await monitorReading(setup, { stages, latch: trigger(new Date()) }))!,
      );
      expect(final.run.status, final.run.failureReason ?? "").toBe("succeeded");
      expect(final.input.targets.map((t) => t.targetId).sort()).toEqual(
        Object.values(targets).sort(),
      );
      expect(final.log).toContain(
        "consolidate: no node went down at the first threshold in this outage",
      );
      for (const node of lab.model.nodes) expect(node.online).toBe(false);
    } finally {
      await setMode("dry-run");
    }
  }, 180_000);

  it("a migration that fails keeps its node up (handed back, said); the final takes it down before the node that stays", async () => {
    const setup = await consolidatingCluster();
    const { lab, targets, clusterId } = setup;
    lab.faults.migrationFails = [201];
    await setMode("armed");
    try {
      const stages = { [clusterId]: firstStage(new Date(Date.now() - 1000)) };
      const first = await finished((await monitorReading(setup, { stages, latch: null }))!);
      expect(first.run.status, first.run.failureReason ?? "").toBe("succeeded");
      expect(find(first.actions, "migrate qemu 201 → pve3")).toMatchObject({
        outcome: "failed",
        detail: expect.stringMatching(/^migration aborted .*ssh .*failed: exit code 255$/),
      });
      expect(first.log).toMatch(
        /pve2 NOT shut down at the first threshold — their guests did not all move: qemu 201 \(migration aborted/,
      );
      expect(lab.model.node("pve1")!.online).toBe(false);
      expect(lab.model.node("pve2")!.online).toBe(true);
      expect(lab.model.guests.get(201)).toMatchObject({ node: "pve2", status: "running" });
      expect(lab.model.guests.get(101)!.node).toBe("pve3");

      // The final: pve2 (handed back) and pve3 as one unit, pve3 — the console's — last.
      const final = await finished(
        (await monitorReading(setup, { stages, latch: trigger(new Date()) }))!,
      );
      expect(final.run.status, final.run.failureReason ?? "").toBe("succeeded");
      expect(final.input.targets.map((t) => t.targetId).sort()).toEqual(
        [targets.pve2, targets.pve3].sort(),
      );
      const shutdowns = final.actions.filter((a) => /^shutdown pve\d$/.test(a.label));
      expect(shutdowns.map((a) => a.label)).toEqual(["shutdown pve2", "shutdown pve3"]);
      for (const node of lab.model.nodes) expect(node.online).toBe(false);
    } finally {
      await setMode("dry-run");
    }
  }, 180_000);

  it("power back before the first stage sent anything: cancelled and said; in dry-run it records what it would do and sends nothing, not even a read", async () => {
    const setup = await consolidatingCluster();
    const { lab, clusterId } = setup;
    // Choosing consolidate asked the hosts again, which checked: that check stands in for the
    // live one in dry-run, which asks nothing. (Waited for: its reads are not the runs'.)
    const check = await waitFor(
      "the check a policy change asks for",
      async () => {
        const [row] = await database.db
          .select({ check: powerClusters.consolidateCheck })
          .from(powerClusters)
          .where(eq(powerClusters.id, clusterId));
        return row?.check ?? false;
      },
      30_000,
      100,
    );
    expect(check.verdict, check.summary).toBe("ok");
    const stages = { [clusterId]: firstStage(new Date(Date.now() - 1000)) };
    const sentBefore = lab.nodes.map((n) => n.api.requests.length);
    // The run starts as the stage latched; when it asks, the UPS reads mains again.
    const cancelled = await finished(
      (await monitorReading(setup, { stages, latch: null }, false))!,
    );
    expect(cancelled.run.failureReason).toBe(SHUTDOWN_CANCELLED);
    expect(cancelled.run.context.outcome).toBe("cancelled");
    expect(cancelled.log).toContain(SHUTDOWN_CANCELLED);
    expect(lab.nodes.map((n) => n.api.requests.length)).toEqual(sentBefore);

    const before = lab.nodes.map((n) => n.api.requests.length);
    // On battery again while the latch holds: a cancelled run covers nothing, a new one starts.
    const runId = (await monitorReading(setup, { stages, latch: null }))!;
    const first = await finished(runId);
    expect(first.run.status, first.run.failureReason ?? "").toBe("succeeded");
    expect(
      lab.nodes.flatMap((n, i) =>
        n.api.requests.slice(before[i]).map((r) => `${r.method} ${r.path}`),
      ),
    ).toEqual([]);
    expect(find(first.actions, "check consolidation")).toMatchObject({ outcome: "would-do" });
    expect(find(first.actions, "migrate guests")).toMatchObject({
      outcome: "would-do",
      request: expect.stringMatching(
        /POST https:\/\/127\.0\.0\.1:\d+\/api2\/json\/nodes\/\{node\}\/qemu\/\{vmid\}\/migrate target=pve3 online=1/,
      ),
    });
    expect(first.log).toMatch(
      /would migrate guests: POST https:\/\/.*\/migrate target=pve3 online=1; POST .*\/lxc\/\{vmid\}\/migrate target=pve3 restart=1 \(dry-run: nothing sent\)/,
    );
    expect(first.log).toMatch(
      /pve1-\w+: would POST https:\/\/.*\/nodes\/pve1\/status command=shutdown/,
    );
    for (const node of lab.model.nodes) expect(node.online).toBe(true);
    expect((await runRow(database.db, runId)).status).toBe("succeeded");
  }, 120_000);
});
