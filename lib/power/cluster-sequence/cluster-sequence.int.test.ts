import { CONSOLE_PRIVILEGE_NAMES } from "@/lib/proxmox/console-identity";
import https from "node:https";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { and, eq } from "drizzle-orm";
import { auditLog, powerEvents } from "@/lib/db/schema";
import { readLogTail } from "@/lib/logs/read";
import { actionsOfRun, type PowerRunAction } from "@/lib/power/records/run-actions";
import { startShutdownRun } from "@/lib/power/shutdown-pipeline/start-shutdown-run";
import { loadClusterGroups } from "@/lib/power/clusters/load-cluster-groups";
import { restoreCluster } from "@/lib/power/operations/restore-cluster";
import { loadTargets, type PveEndpoint } from "@/lib/power/targets/load-targets";
import { clusterApiOver } from "../clusters/sequence-api";
import { startLabCluster, waitUntil, type LabCluster } from "@/lab";
import type { LabGuestSpec, PveRelease } from "@/lab/pve/cluster/model";
import { registerTestDatabase } from "@/test/db";
import { ADMIN, persistReading, shutdownInput, setModeConfirmingAll } from "@/test/fixtures/power";
import { settled } from "@/test/runs";
import type { WorkerHandle } from "@/worker/runner";
import { HA_NOT_AVAILABLE } from "./disarm-ha";
import { protectLabCluster, startClusterTestWorker } from "@/test/fixtures/protected-lab-cluster";

/**
 * The cluster sequence against lab clusters over real HTTPS: three nodes sharing one pmxcfs,
 * guests on Ceph (pool size 3, min_size 2) with HA, monitors on pve2 and pve3, the console on
 * pve3 (its node) in guest 390 on local storage.
 */

const database = registerTestDatabase(6);
let worker: WorkerHandle;
const labs: LabCluster[] = [];

const CONSOLE_GUEST = { node: "pve3", vmid: 390 };

function guests(): LabGuestSpec[] {
  return [
    ...["pve1", "pve2", "pve3"].flatMap((node, i): LabGuestSpec[] => [
      { vmid: 101 + i * 10, type: "qemu", node, storage: "ceph", ha: true },
      { vmid: 102 + i * 10, type: "lxc", node, storage: "ceph" },
      { vmid: 103 + i * 10, type: "qemu", node, storage: "local" },
    ]),
    { vmid: CONSOLE_GUEST.vmid, type: "qemu", node: "pve3", storage: "local", name: "clupilot" },
  ];
}

type Setup = {
  lab: LabCluster;
  upsId: string;
  targets: Record<string, string>;
  placement: Map<number, string>;
};

let counter = 0;

async function labCluster(
  options: { pveVersion?: PveRelease; privs?: string[]; ceph?: boolean } = {},
): Promise<Setup> {
  const { db } = database;
  const lab = await startLabCluster({
    nodes: 3,
    name: `seq-${++counter}`,
    guests: guests(),
    ceph: options.ceph === false ? false : { monitors: ["pve2", "pve3"] },
    ...(options.pveVersion ? { pveVersion: options.pveVersion } : {}),
    // Short lab times: every wait below is the sequence's own order, not the lab's clock. A guest
    // frozen on Ceph never stops by itself, however short its clean shutdown.
    timing: { guestShutdownMs: 100, haDisarmMs: 100, haRecoveryMs: 100, nodeShutdownDelayMs: 100 },
    apiAuthFailureDelayMs: 50,
  });
  labs.push(lab);
  // The console's node is known from its guest (the setting), not from a target mark.
  const { upsId, targets } = await protectLabCluster(
    db,
    lab,
    options.privs ? { privs: options.privs } : {},
  );
  const placement = new Map([...lab.model.guests.values()].map((g) => [g.vmid, g.node]));
  return { lab, upsId, targets, placement };
}

async function setMode(mode: "armed" | "dry-run") {
  await setModeConfirmingAll(database.db, mode);
}

async function runSequence(setup: Setup, timeoutMs = 120_000) {
  const { db } = database;
  await persistReading(db, setup.upsId, true);
  const runId = await db.transaction((tx) =>
    startShutdownRun(tx, shutdownInput(setup.upsId, Object.values(setup.targets))),
  );
  const run = await settled(db, runId, timeoutMs);
  const actions = await actionsOfRun(db, runId);
  const log = (await readLogTail(db, runId, 500)).map((l) => l.text).join("\n");
  return { run, actions, log };
}

async function eventsOfRun(runId: string, kind: string) {
  return database.db
    .select()
    .from(powerEvents)
    .where(and(eq(powerEvents.runId, runId), eq(powerEvents.kind, kind)));
}

const changes = (lab: LabCluster) =>
  lab.nodes.flatMap((n) => n.api.requests.filter((r) => r.method === "POST" || r.method === "PUT"));

const find = (actions: PowerRunAction[], label: string) => {
  const action = actions.find((a) => a.label === label);
  if (!action) throw new Error(`no action '${label}' in ${actions.map((a) => a.label).join(", ")}`);
  return action;
};

/** POST with a fresh connection (a node that lost power then refuses it). */
function post(lab: LabCluster, node: string, path: string, form: Record<string, string>) {
  const target = lab.nodes.find((n) => n.name === node)!;
  const token = lab.addToken("naive", [...CONSOLE_PRIVILEGE_NAMES]);
  return new Promise<number>((resolve, reject) => {
    const req = https.request(
      `${target.api.url}/api2/json${path}`,
      {
        method: "POST",
        rejectUnauthorized: false,
        agent: false,
        headers: {
          Authorization: `PVEAPIToken=${token.id}=${token.secret}`,
          "Content-Type": "application/x-www-form-urlencoded",
        },
      },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      },
    );
    req.on("error", reject);
    req.end(new URLSearchParams(form).toString());
  });
}

beforeAll(async () => {
  worker = await startClusterTestWorker(database, CONSOLE_GUEST);
}, 60_000);

afterAll(async () => {
  await worker?.stop();
  for (const lab of labs) await lab.stop();
});

describe("the cluster shutdown sequence", () => {
  it("the naive order (each node stops its own guests, then powers off) hangs on the Ceph lab while HA moves guests", async () => {
    const { lab, placement } = await labCluster();
    // A node here is off within a second; a frozen guest holds its node forever.
    const deadlineMs = 4000;
    const wentDown: Record<string, boolean> = {};
    for (const node of ["pve1", "pve2", "pve3"]) {
      expect(await post(lab, node, `/nodes/${node}/status`, { command: "shutdown" })).toBe(200);
      wentDown[node] = await waitUntil(() => !lab.model.node(node)!.online, {
        timeoutMs: deadlineMs,
        what: `${node} off`,
      }).then(
        () => true,
        () => false,
      );
      if (!wentDown[node]) break;
    }
    // pve1 and pve2 go; then Ceph has one OSD host of three (min_size 2): pve3's guests on
    // Ceph freeze on I/O and its shutdown hangs past the deadline.
    expect(wentDown).toEqual({ pve1: true, pve2: true, pve3: false });
    expect(lab.model.cephBlocked()).toBe(true);
    expect(lab.model.node("pve3")!.online).toBe(true);
    // HA was armed: it started pve1's HA guest elsewhere instead of letting it stop.
    expect(placement.get(101)).toBe("pve1");
    expect(lab.model.guests.get(101)!.node).not.toBe("pve1");
  }, 60_000);

  it("ours: HA disarmed and read back first, every guest stopped but the console's, flags set, nodes monitors-last and the console's node last — every node off", async () => {
    const setup = await labCluster();
    const { lab, placement } = setup;
    await setMode("armed");
    try {
      const { run, actions, log } = await runSequence(setup);
      expect(run.status, run.failureReason ?? "").toBe("succeeded");
      for (const node of lab.model.nodes) expect(node.online).toBe(false);

      const disarm = find(actions, "disarm HA");
      expect(disarm).toMatchObject({ outcome: "ok", detail: "read back: armed-state disarmed" });
      const stop = find(actions, "stop guests");
      expect(stop.outcome).toBe("ok");
      const flags = find(actions, "set Ceph flags");
      expect(flags.outcome).toBe("ok");
      const shutdowns = actions.filter((a) => /^shutdown pve\d$/.test(a.label));
      expect(shutdowns.map((a) => [a.label, a.outcome])).toEqual([
        ["shutdown pve1", "ok"],
        ["shutdown pve2", "ok"],
        ["shutdown pve3", "ok"],
      ]);
      // Each step began after the one before it was verified.
      expect(disarm.finishedAt!.getTime()).toBeLessThanOrEqual(stop.startedAt.getTime());
      expect(stop.finishedAt!.getTime()).toBeLessThanOrEqual(flags.startedAt.getTime());
      expect(flags.finishedAt!.getTime()).toBeLessThanOrEqual(shutdowns[0]!.startedAt.getTime());
      // The next node waited until the one before stopped answering.
      for (const [i, node] of ["pve1", "pve2"].entries()) {
        const down = find(actions, `${node} goes down`);
        expect(down.outcome).toBe("ok");
        expect(down.finishedAt!.getTime()).toBeLessThanOrEqual(
          shutdowns[i + 1]!.startedAt.getTime(),
        );
      }
      // Each node's shutdown went to its own API.
      for (const node of lab.nodes) {
        const own = node.api.requests.filter(
          (r) => r.method === "POST" && r.path.endsWith("/status") && r.path.includes("/nodes/"),
        );
        expect(own.map((r) => r.path)).toEqual([`/api2/json/nodes/${node.name}/status`]);
      }

      // HA stayed disarmed (read back in the log) and moved nothing: every guest where it was.
      expect(lab.model.armedState).toBe("disarmed");
      for (const [vmid, node] of placement) expect(lab.model.guests.get(vmid)!.node).toBe(node);
      expect(log).toContain("HA disarmed (read back: armed-state disarmed)");
      // The bulk action named every running guest but the console's own.
      const bulk = changes(lab).find((r) => r.path.endsWith("/bulk-action/guest/shutdown"))!;
      const vms = bulk.body.vms!.split(",").map(Number);
      expect(vms).not.toContain(CONSOLE_GUEST.vmid);
      expect(vms.sort()).toEqual([101, 102, 103, 111, 112, 113, 121, 122, 123]);
      expect(lab.model.ceph!.flags).toEqual(
        new Set(["noout", "nobackfill", "norecover", "norebalance"]),
      );
    } finally {
      await setMode("dry-run");
    }
  }, 150_000);

  it("flags a PUT that answers 200 without setting: per-flag fallback, verified; still not set → said, and the nodes go down all the same", async () => {
    const first = await labCluster();
    first.lab.faults.bulkFlagsIgnored = true;
    await setMode("armed");
    try {
      const fallback = await runSequence(first);
      expect(fallback.run.status, fallback.run.failureReason ?? "").toBe("succeeded");
      expect(find(fallback.actions, "set Ceph flags")).toMatchObject({
        outcome: "ok",
        detail: expect.stringMatching(/one by one/),
      });
      const singles = changes(first.lab).filter((r) => /\/cluster\/ceph\/flags\/\w+$/.test(r.path));
      expect(singles.map((r) => r.path.split("/").pop()).sort()).toEqual([
        "nobackfill",
        "noout",
        "norebalance",
        "norecover",
      ]);

      const second = await labCluster();
      second.lab.faults.bulkFlagsIgnored = true;
      second.lab.faults.singleFlagIgnored = true;
      await setMode("armed");
      const refused = await runSequence(second);
      expect(find(refused.actions, "set Ceph flags")).toMatchObject({
        outcome: "failed",
        detail: expect.stringMatching(/still not set: noout, nobackfill, norecover, norebalance/),
      });
      expect(refused.log).toMatch(/Ceph flags still not set: .* going on with the nodes/);
      for (const node of second.lab.model.nodes) expect(node.online).toBe(false);
      expect(refused.run.status, refused.run.failureReason ?? "").toBe("succeeded");
    } finally {
      await setMode("dry-run");
    }
  }, 240_000);

  it("a token without VM.Audit: the guests cannot be listed, so the cluster falls back to each node's own shutdown in order, said as a critical event", async () => {
    const setup = await labCluster({
      privs: CONSOLE_PRIVILEGE_NAMES.filter((p) => p !== "VM.Audit"),
    });
    await setMode("armed");
    try {
      const { run, log } = await runSequence(setup);
      const fell = await eventsOfRun(run.id, "cluster.fell_back");
      expect(fell).toHaveLength(1);
      expect(fell[0]).toMatchObject({ severity: "critical" });
      expect(fell[0]!.message).toMatch(
        /could not see the guests: .* no VM.Audit on \/vms.*each node is shut down by its own API in the planned order \(pve1, pve2, pve3\)/,
      );
      expect(log).toMatch(/"could not see", not "no guests"/);
      // Never an empty list read as "no guests": nothing cluster-wide was sent after that.
      const sent = changes(setup.lab).map((r) => r.path);
      expect(sent.filter((p) => /bulk-action|ceph\/flags/.test(p))).toEqual([]);
      // Every node was told by its own API, in the planned order (monitors after the others,
      // the console's node last).
      const shutdowns = setup.lab.nodes.flatMap((n) =>
        n.api.requests
          .filter((r) => r.method === "POST" && r.path === `/api2/json/nodes/${n.name}/status`)
          .map((r) => ({ node: n.name, at: r.at.getTime() })),
      );
      expect(
        [...shutdowns]
          .sort((a, b) => a.at - b.at)
          .map((s) => s.node)
          .filter((n, i, all) => all.indexOf(n) === i),
      ).toEqual(["pve1", "pve2", "pve3"]);
      expect(setup.lab.model.nodes.find((n) => n.name === "pve1")!.online).toBe(false);
      // What the run says is what happened: succeeded only if every node was seen down.
      const down = setup.lab.model.nodes.every((n) => !n.online);
      expect(run.status).toBe(down ? "succeeded" : "failed");
    } finally {
      await setMode("dry-run");
    }
  }, 240_000);

  it("the preferred API node powered off before the outage: the cluster-wide calls go to another member, and the cluster still goes down in order", async () => {
    const setup = await labCluster();
    // The sequence asks the console's node (pve3) first: it is gone before the outage.
    await setup.lab.powerOff("pve3");
    await setMode("armed");
    try {
      const { run, actions, log } = await runSequence(setup);
      expect(run.status, run.failureReason ?? "").toBe("succeeded");
      expect(log).toMatch(/the cluster-wide calls go to pve2: pve3: /);
      expect(find(actions, "disarm HA")).toMatchObject({ outcome: "ok" });
      expect(find(actions, "disarm HA").request).toContain(
        setup.lab.nodes.find((n) => n.name === "pve2")!.api.url,
      );
      expect(find(actions, "stop guests")).toMatchObject({ outcome: "ok" });
      expect(find(actions, "set Ceph flags")).toMatchObject({ outcome: "ok" });
      const pve2 = setup.lab.nodes.find((n) => n.name === "pve2")!;
      expect(pve2.api.requests.some((r) => r.path.endsWith("/cluster/ha/status/disarm-ha"))).toBe(
        true,
      );
      for (const node of setup.lab.model.nodes) expect(node.online).toBe(false);
      expect(await eventsOfRun(run.id, "cluster.fell_back")).toEqual([]);
    } finally {
      await setMode("dry-run");
    }
  }, 240_000);

  it("a member that stops answering mid-sequence: the next call goes to the next member that answers; none answering is said, never read as an answer", async () => {
    const setup = await labCluster();
    const all = await loadTargets(database.db);
    // This cluster's own targets: earlier tests' clusters have the same node names.
    const endpoint = (node: string) =>
      all.find((t) => t.id === setup.targets[node])!.endpoint as PveEndpoint;
    const switched: string[] = [];
    const reach = await clusterApiOver(database.db, ["pve3", "pve2", "pve1"].map(endpoint), {
      timeoutMs: 2000,
      onSwitch: (from, to) => switched.push(`${from}→${to}`),
    });
    if (!reach.api) throw new Error(reach.why);
    const { api } = reach;
    expect(api.node).toBe("pve3");
    const before = (await api.guests()).length;
    await setup.lab.powerOff("pve3");
    expect(await api.guests()).toHaveLength(before);
    expect(api.node).toBe("pve2");
    await setup.lab.powerOff("pve2");
    await setup.lab.powerOff("pve1");
    await expect(api.guests()).rejects.toThrow(
      /no member of the cluster answers its API: pve3: .*; pve2: .*; pve1: /,
    );
    expect(switched).toEqual(["pve3→pve2"]);
  }, 120_000);

  it("a partial outage (the UPS feeds pve1 only): pve1's guests stopped, noout alone, pve1 off — HA stays armed and pve2, pve3 keep their guests", async () => {
    const setup = await labCluster();
    const { db } = database;
    await setMode("armed");
    try {
      await persistReading(db, setup.upsId, true);
      const runId = await db.transaction((tx) =>
        startShutdownRun(tx, shutdownInput(setup.upsId, [setup.targets.pve1!])),
      );
      const run = await settled(db, runId, 120_000);
      expect(run.status, run.failureReason ?? "").toBe("succeeded");
      const { model } = setup.lab;
      expect(model.nodes.map((n) => [n.name, n.online])).toEqual([
        ["pve1", false],
        ["pve2", true],
        ["pve3", true],
      ]);
      // HA was never disarmed: the nodes that keep power keep its protection.
      expect(model.armedState).toBe("armed");
      expect(changes(setup.lab).some((r) => r.path.endsWith("/disarm-ha"))).toBe(false);
      expect([...model.ceph!.flags]).toEqual(["noout"]);
      for (const guest of model.guests.values()) {
        if (guest.vmid === CONSOLE_GUEST.vmid) continue;
        expect([guest.vmid, guest.status]).toEqual([
          guest.vmid,
          guest.node === "pve1" ? "stopped" : "running",
        ]);
      }
      const log = (await readLogTail(db, runId, 500)).map((l) => l.text).join("\n");
      expect(log).toMatch(/partial outage: only pve1 lost power; pve2, pve3 keep running/);
    } finally {
      await setMode("dry-run");
    }
  }, 120_000);

  it("Proxmox VE 8.4: says plainly that HA protection is not available, stops each guest itself (bounded), and the nodes go down", async () => {
    const setup = await labCluster({ pveVersion: "8.4" });
    await setMode("armed");
    try {
      const { run, actions, log } = await runSequence(setup);
      expect(run.status, run.failureReason ?? "").toBe("succeeded");
      expect(find(actions, "disarm HA")).toMatchObject({
        outcome: "failed",
        detail: HA_NOT_AVAILABLE,
      });
      expect(log).toContain("HA protection is not available");
      const perGuest = actions.filter((a) => /^shutdown (qemu|lxc) \d+$/.test(a.label));
      expect(perGuest).toHaveLength(9);
      expect(perGuest.every((a) => a.outcome === "ok")).toBe(true);
      expect(perGuest.map((a) => a.label)).not.toContain(`shutdown qemu ${CONSOLE_GUEST.vmid}`);
      // Never more than guestParallelism (4) shutting down at once.
      const instants = perGuest.map((a) => a.startedAt.getTime());
      for (const at of instants) {
        const open = perGuest.filter(
          (a) => a.startedAt.getTime() <= at && a.finishedAt!.getTime() > at,
        );
        expect(open.length).toBeLessThanOrEqual(4);
      }
      for (const node of setup.lab.model.nodes) expect(node.online).toBe(false);
    } finally {
      await setMode("dry-run");
    }
    // Restore there says HA was never disarmed instead of pretending to re-arm it.
    for (const node of setup.lab.nodes) await setup.lab.powerOn(node.name);
    const cluster = (await loadClusterGroups(database.db)).find((g) => g.name === setup.lab.name)!;
    const report = await restoreCluster(database.db, { clusterId: cluster.id }, ADMIN);
    expect(report.items[0]).toMatchObject({ what: "HA", outcome: "not-available" });
  }, 150_000);

  it("restore after power returns: HA re-armed and the Ceph flags cleared, both read back, audited", async () => {
    const { db } = database;
    const setup = await labCluster();
    const { lab } = setup;
    await setMode("armed");
    try {
      expect((await runSequence(setup)).run.status).toBe("succeeded");
    } finally {
      await setMode("dry-run");
    }
    expect(lab.model.armedState).toBe("disarmed");
    expect(lab.model.ceph!.flags.size).toBe(4);
    for (const node of lab.nodes) await lab.powerOn(node.name);
    const cluster = (await loadClusterGroups(db)).find((g) => g.name === lab.name)!;

    const report = await restoreCluster(db, { clusterId: cluster.id }, ADMIN);
    expect(report).toMatchObject({
      cluster: lab.name,
      restored: true,
      items: [
        { what: "HA", outcome: "restored", detail: "re-armed (read back: armed-state armed)" },
        { what: "Ceph flags", outcome: "restored" },
      ],
    });
    expect(lab.model.armedState).toBe("armed");
    expect(lab.model.ceph!.flags.size).toBe(0);
    // This cluster's own rows: the test before restored another cluster, and rows
    // come back in no particular order without ORDER BY.
    const audit = await db
      .select()
      .from(auditLog)
      .where(
        and(
          eq(auditLog.action, "power.cluster_restore"),
          eq(auditLog.target, `cluster:${cluster.id}`),
        ),
      );
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ outcome: "success" });

    // Flags that no call clears are reported, never called restored.
    lab.model.setFlag("noout", true);
    lab.faults.bulkFlagsIgnored = true;
    lab.faults.singleFlagIgnored = true;
    const stuck = await restoreCluster(db, { clusterId: cluster.id }, ADMIN);
    expect(stuck.restored).toBe(false);
    expect(stuck.items[1]).toMatchObject({
      outcome: "failed",
      detail: expect.stringMatching(/still set .*: noout/),
    });
  }, 150_000);

  it("in dry-run records every step as would-do and sends nothing", async () => {
    const setup = await labCluster();
    const { run, actions } = await runSequence(setup);
    expect(run.status, run.failureReason ?? "").toBe("succeeded");
    expect(actions.map((a) => [a.lane, a.label, a.outcome])).toEqual([
      ["cluster", "disarm HA", "would-do"],
      ["cluster", "stop guests", "would-do"],
      ["cluster", "set Ceph flags", "would-do"],
      ["pve1", "shutdown pve1", "would-do"],
      ["pve2", "shutdown pve2", "would-do"],
      ["pve3", "shutdown pve3", "would-do"],
    ]);
    expect(find(actions, "disarm HA").request).toContain(
      "/api2/json/cluster/ha/status/disarm-ha resource-mode=ignore",
    );
    expect(changes(setup.lab)).toEqual([]);
    for (const node of setup.lab.model.nodes) expect(node.online).toBe(true);
  }, 120_000);
});
