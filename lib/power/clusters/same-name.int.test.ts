import { CONSOLE_PRIVILEGE_NAMES } from "@/lib/proxmox/console-identity";
import { and, eq, gte } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { powerClusterMemberships, powerClusters, powerEvents, powerTargets } from "@/lib/db/schema";
import { startLab, startLabCluster, type LabCluster, type LabNode } from "@/lab";
import type { LabGuestSpec } from "@/lab/pve/cluster/model";
import { protectLabCluster, startClusterTestWorker } from "@/test/fixtures/protected-lab-cluster";
import { buildPlan } from "@/lib/power/shutdown/shutdown-plan";
import { startShutdownRun } from "@/lib/power/shutdown-pipeline/start-shutdown-run";
import { DEFAULT_POWER_SETTINGS } from "@/lib/power/config/settings";
import { loadTargets } from "@/lib/power/targets/load-targets";
import { registerTestDatabase } from "@/test/db";
import { ADMIN, persistReading, shutdownInput, setModeConfirmingAll } from "@/test/fixtures/power";
import { settled } from "@/test/runs";
import type { WorkerHandle } from "@/worker/runner";
import { listClusterGroups, listLooseHosts } from "./cluster-groups-view";
import { loadClusterGroups, type ClusterGroup } from "./load-cluster-groups";
import { refreshClusterGroups } from "../cluster-refresh/refresh-cluster-groups";
import { setClusterPolicy } from "../operations/set-cluster-policy";
import { pointHostAt } from "@/test/fixtures/active-lab-host";

/**
 * Two lab clusters with the same name — "pve-cluster", as operators call theirs at every site —
 * with the same node names, node ids and private addresses, and so the same corosync.conf byte
 * for byte: the console must see two clusters (by their certificates), take each down through
 * its own nodes only, and say so where it cannot tell.
 */

const NAME = "pve-cluster";
const database = registerTestDatabase(6);
let worker: WorkerHandle;
let east: LabCluster;
let west: LabCluster;
let solo: LabNode;
const setups: Record<"east" | "west", { upsId: string; targets: Record<string, string> }> = {
  east: { upsId: "", targets: {} },
  west: { upsId: "", targets: {} },
};

const guests = (): LabGuestSpec[] =>
  ["pve1", "pve2", "pve3"].flatMap((node, i): LabGuestSpec[] => [
    { vmid: 101 + i * 10, type: "qemu", node, ha: true },
    { vmid: 102 + i * 10, type: "lxc", node },
  ]);

const start = () =>
  startLabCluster({
    nodes: 3,
    name: NAME,
    guests: guests(),
    timing: { guestShutdownMs: 100, haDisarmMs: 100, haRecoveryMs: 100, nodeShutdownDelayMs: 100 },
    apiAuthFailureDelayMs: 50,
  });

/** The host ids of a group's nodes, by node name. */
const hostsOf = (group: ClusterGroup) =>
  Object.fromEntries(group.nodes.map((n) => [n.name, n.hostId]));

async function targetHost(targetId: string): Promise<string> {
  const [row] = await database.db
    .select({ hostId: powerTargets.hostId })
    .from(powerTargets)
    .where(eq(powerTargets.id, targetId));
  return row!.hostId!;
}

/** The group each lab's hosts are in (by their targets' hosts). */
async function groupsOf(lab: "east" | "west"): Promise<ClusterGroup[]> {
  const ids = await Promise.all(Object.values(setups[lab].targets).map(targetHost));
  return (await loadClusterGroups(database.db)).filter((g) =>
    g.nodes.some((n) => n.hostId && ids.includes(n.hostId)),
  );
}

async function armAll() {
  await setModeConfirmingAll(database.db, "armed");
}

async function shutDown(lab: "east" | "west") {
  const { upsId, targets } = setups[lab];
  await persistReading(database.db, upsId, true);
  const runId = await database.db.transaction((tx) =>
    startShutdownRun(tx, shutdownInput(upsId, Object.values(targets))),
  );
  return settled(database.db, runId, 120_000);
}

const changes = (lab: LabCluster) =>
  lab.nodes.flatMap((n) =>
    n.api.requests
      .filter((r) => r.method === "POST" || r.method === "PUT")
      .map((r) => `${n.name} ${r.method} ${r.path}`),
  );

beforeAll(async () => {
  worker = await startClusterTestWorker(database, null);
  [east, west, solo] = await Promise.all([
    start(),
    start(),
    startLab({
      name: "solo",
      state: "onboarded",
      timeScale: 0.01,
      pve: { apiAuthFailureDelayMs: 50 },
    }),
  ]);
  setups.east = await protectLabCluster(database.db, east, { upsName: "ups-east" });
  setups.west = await protectLabCluster(database.db, west, { upsName: "ups-west" });
}, 120_000);

afterAll(async () => {
  await worker?.stop();
  await east?.stop();
  await west?.stop();
  await solo?.stop();
});

describe("two clusters with the same name", () => {
  it("are two groups, each with its own hosts, told apart by the certificates their configurations name", async () => {
    const groups = await loadClusterGroups(database.db);
    expect(groups.map((g) => g.name)).toEqual([NAME, NAME]);
    const [e] = await groupsOf("east");
    const [w] = await groupsOf("west");
    expect(e!.id).not.toBe(w!.id);
    expect(await groupsOf("east")).toHaveLength(1);
    expect(await groupsOf("west")).toHaveLength(1);
    for (const [group, setup] of [
      [e!, setups.east],
      [w!, setups.west],
    ] as const) {
      expect(group.nodes.map((n) => n.name)).toEqual(["pve1", "pve2", "pve3"]);
      for (const [node, targetId] of Object.entries(setup.targets)) {
        expect(hostsOf(group)[node]).toBe(await targetHost(targetId));
      }
      expect(group.membership).toMatchObject({
        verdict: "confirmed",
        sameName: [
          {
            clusterId: group === e ? w!.id : e!.id,
            kind: "apart",
            why: expect.stringMatching(/names pve\d with another certificate/),
          },
        ],
      });
      // The other cluster's hosts in name order, however their answers raced in.
      const others = group.membership!.sameName[0]!.hosts;
      expect(others).toEqual([...others].sort());
      expect(others).toHaveLength(3);
      expect(group.ambiguity).toBeNull();
      expect(group.policy).toBe("cluster");
      // Said apart wherever the name is shown.
      expect(group.label).toMatch(/^pve-cluster \(pve1-\w+, pve2-\w+, pve3-\w+\)$/);
    }
    expect(e!.label).not.toBe(w!.label);
  });

  it("a node serving another certificate than its cluster names (its own one installed, pveproxy not restarted) stays in its cluster", async () => {
    await east.installCustomCertificate("pve3", { restart: false });
    await refreshClusterGroups(database.db, { all: true });
    const groups = await groupsOf("east");
    expect(groups).toHaveLength(1);
    expect(groups[0]!.nodes.every((n) => n.hostId)).toBe(true);
    expect(groups[0]!.membership!.findings.join("\n")).toMatch(
      /pve3\) serves another certificate .* than its cluster's configuration names for it/,
    );
    expect(groups[0]!.membership!.sameName).toEqual([expect.objectContaining({ kind: "apart" })]);
  });

  it("a host that leaves shows up as standalone and its node unknown; back, it is in its own cluster again — never in the other", async () => {
    const hostId = await targetHost(setups.west.targets.pve3!);
    await pointHostAt(database.db, hostId, {
      nodeName: "solo",
      port: solo.api.port,
      certSha256: solo.api.certSha256,
      token: solo.pve.token!,
    });
    await refreshClusterGroups(database.db, { all: true });
    const [w] = await groupsOf("west");
    expect(hostsOf(w!).pve3).toBeNull();
    expect((await listLooseHosts(database.db)).standalone.map((h) => h.hostId)).toEqual([hostId]);

    const node = west.nodes.find((n) => n.name === "pve3")!;
    await pointHostAt(database.db, hostId, {
      nodeName: "pve3",
      port: node.api.port,
      certSha256: node.api.certSha256,
      token: west.addToken("console", [...CONSOLE_PRIVILEGE_NAMES]),
    });
    await refreshClusterGroups(database.db, { all: true });
    const [back] = await groupsOf("west");
    expect(back!.id).toBe(w!.id);
    expect(hostsOf(back!).pve3).toBe(hostId);
    const [e] = await groupsOf("east");
    expect(Object.values(hostsOf(e!))).not.toContain(hostId);
  });

  it("a row that held both (as before names stopped being identities) stays with the cluster its recorded certificates name; the other gets a row of its own, and the kept policy is said", async () => {
    const [e] = await groupsOf("east");
    const [w] = await groupsOf("west");
    // The upgrade's starting point: one row of the name, east's, counted with all six hosts.
    await database.db
      .update(powerClusterMemberships)
      .set({ clusterId: e!.id })
      .where(eq(powerClusterMemberships.clusterId, w!.id));
    await database.db.delete(powerClusters).where(eq(powerClusters.id, w!.id));
    await database.db
      .update(powerClusters)
      .set({ policy: "per-host" })
      .where(eq(powerClusters.id, e!.id));
    const since = new Date();

    await refreshClusterGroups(database.db, { all: true });
    const [east2] = await groupsOf("east");
    const [west2] = await groupsOf("west");
    expect(east2!.id).toBe(e!.id);
    expect(east2!.policy).toBe("per-host");
    expect(west2!.id).not.toBe(e!.id);
    expect(west2!.policy).toBe("cluster");
    const said = await database.db
      .select({ message: powerEvents.message })
      .from(powerEvents)
      .where(and(eq(powerEvents.kind, "cluster.membership"), gte(powerEvents.at, since)));
    expect(said.map((x) => x.message).join("\n")).toMatch(
      /pve-cluster \(.*\) keeps the policy per-host it had while counted together with hosts that are another cluster of the same name/,
    );
    await database.db
      .update(powerClusters)
      .set({ policy: "cluster" })
      .where(eq(powerClusters.id, e!.id));
  });

  it("a shutdown of one takes down that cluster through its own nodes: the other keeps HA armed, its guests running and its nodes up", async () => {
    await armAll();
    const before = changes(east).length;
    const run = await shutDown("west");
    expect(run.status, run.failureReason ?? "").toBe("succeeded");
    expect(west.model.armedState).toBe("disarmed");
    expect([...west.model.guests.values()].filter((g) => g.status === "running")).toEqual([]);
    expect(west.model.nodes.map((n) => n.online)).toEqual([false, false, false]);
    // Not one change reached the other cluster.
    expect(changes(east).slice(before)).toEqual([]);
    expect(east.model.armedState).toBe("armed");
    expect([...east.model.guests.values()].every((g) => g.status === "running")).toBe(true);
    expect(east.model.nodes.map((n) => n.online)).toEqual([true, true, true]);
    for (const node of west.nodes) await west.powerOn(node.name);
    west.model.arm();
  });

  it("where the console cannot tell them apart it says so, on the card and in the plan, and takes each down as one unit through its own hosts", async () => {
    // West's nodes cannot read their cluster's configuration: their certificates are named
    // nowhere the console can read, so each west host could be an east node behind a TLS proxy.
    const westGroup = (await groupsOf("west"))[0]!;
    await setClusterPolicy(database.db, { id: westGroup.id, policy: "per-host" }, ADMIN);
    west.faults.joinInfoFails = ["pve1", "pve2", "pve3"];
    await refreshClusterGroups(database.db, { all: true });

    const views = await listClusterGroups(database.db);
    expect(views).toHaveLength(4);
    const fragments = await groupsOf("west");
    expect(fragments).toHaveLength(3);
    for (const group of fragments) {
      expect(group.membership!.verdict).toBe("ambiguous");
      expect(group.ambiguity).toMatch(
        /^the console cannot tell whether pve-cluster \(pve\d-\w+\) is the same cluster as pve-cluster \(.*\): neither is named in the other's cluster configuration with the certificate it serves, and nothing else tells them apart .*cluster configuration could not be read \(.*no join info available/,
      );
      // Which nodes lost power means nothing while membership is unclear: as one unit, always.
      expect(group.policy).toBe("whole-cluster");
    }
    // The chosen policy stays with the row most of its hosts were in, suspended while ambiguous.
    const kept = fragments.find((g) => g.id === westGroup.id)!;
    expect(kept.chosenPolicy).toBe("per-host");
    expect(kept.policyNote).toMatch(/^per host is suspended/);
    const [e] = await groupsOf("east");
    expect(e!.membership!.verdict).toBe("ambiguous");
    const events = await database.db
      .select()
      .from(powerEvents)
      .where(eq(powerEvents.kind, "cluster.membership"));
    expect(events.map((ev) => ev.message).join("\n")).toMatch(
      /the console cannot tell whether it is the same cluster as/,
    );

    // The plan: every fragment a sequence of its own, each saying why.
    const records = await loadTargets(database.db);
    const westTargets = Object.values(setups.west.targets);
    const plan = buildPlan(
      records,
      new Map(westTargets.map((id) => [id, new Date().toISOString()])),
      { mode: "armed", shutdown: DEFAULT_POWER_SETTINGS.shutdown },
      new Date(),
      await loadClusterGroups(database.db),
    );
    expect(plan.clusters).toHaveLength(3);
    for (const cluster of plan.clusters) {
      expect(cluster.warnings[0]).toMatch(/^AMBIGUOUS: .* Fail-safe: it goes down as one unit/);
    }

    // And so it runs: each west host disarms HA and stops the guests it sees, no node goes down
    // before that is done for every fragment, and the east cluster is not touched.
    const before = changes(east).length;
    const run = await shutDown("west");
    expect(run.status, run.failureReason ?? "").toBe("succeeded");
    for (const node of west.nodes) {
      expect(
        node.api.requests.filter((r) => r.path === "/api2/json/cluster/ha/status/disarm-ha"),
      ).not.toEqual([]);
    }
    expect(west.model.nodes.map((n) => n.online)).toEqual([false, false, false]);
    expect(changes(east).slice(before)).toEqual([]);
    expect(east.model.armedState).toBe("armed");

    // Once the configuration can be read again, west is one cluster again, its policy back.
    for (const node of west.nodes) await west.powerOn(node.name);
    west.faults.joinInfoFails = [];
    await refreshClusterGroups(database.db, { all: true });
    const whole = await groupsOf("west");
    expect(whole).toHaveLength(1);
    expect(whole[0]).toMatchObject({
      id: westGroup.id,
      policy: "per-host",
      ambiguity: null,
      membership: expect.objectContaining({ verdict: "confirmed" }),
    });
  });
});
