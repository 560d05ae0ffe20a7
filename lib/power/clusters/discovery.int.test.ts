import net from "node:net";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hosts, powerClusterMemberships } from "@/lib/db/schema";
import { startLab, startLabCluster, type LabCluster, type LabNode } from "@/lab";
import { registerTestDatabase } from "@/test/db";
import { hostApi } from "./discovery-api";
import { listLooseHosts } from "./cluster-groups-view";
import { loadClusterGroups, type ClusterGroup } from "./load-cluster-groups";
import { waitFor } from "@/test/worker-process";
import { startWorker } from "@/worker/runner";
import { refreshClusterGroups } from "../cluster-refresh/refresh-cluster-groups";
import { CLUSTER_REFRESH_TASK, requestClusterRefresh } from "../cluster-refresh/refresh-task";
import { pointHostAt, seedActiveLabHost, type LabApi } from "@/test/fixtures/active-lab-host";

const database = registerTestDatabase();
let cephLab: LabCluster;
let plainLab: LabCluster;
let solo: LabNode;
const hostIds = new Map<string, string>();

function apiOf(cluster: LabCluster, node: string): LabApi {
  const n = cluster.nodes.find((x) => x.name === node)!;
  return { nodeName: n.name, port: n.api.port, certSha256: n.api.certSha256, token: cluster.token };
}

async function group(name: string): Promise<ClusterGroup | undefined> {
  return (await loadClusterGroups(database.db)).find((g) => g.name === name);
}

async function membership(hostId: string) {
  const [row] = await database.db
    .select()
    .from(powerClusterMemberships)
    .where(eq(powerClusterMemberships.hostId, hostId));
  return row;
}

/** A port nothing listens on: taken, then given back. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

beforeAll(async () => {
  cephLab = await startLabCluster({
    nodes: 3,
    name: "ceph-lab",
    ceph: true,
    apiAuthFailureDelayMs: 50,
  });
  plainLab = await startLabCluster({
    nodes: ["px1", "px2"],
    name: "plain-lab",
    apiAuthFailureDelayMs: 50,
  });
  solo = await startLab({
    name: "solo",
    state: "onboarded",
    timeScale: 0.01,
    pve: { apiAuthFailureDelayMs: 50 },
  });
  for (const node of ["pve1", "pve2"]) {
    hostIds.set(node, await seedActiveLabHost(database.db, apiOf(cephLab, node)));
  }
  hostIds.set("px1", await seedActiveLabHost(database.db, apiOf(plainLab, "px1")));
}, 60_000);

afterAll(async () => {
  await cephLab?.stop();
  await plainLab?.stop();
  await solo?.stop();
});

describe("cluster discovery", () => {
  it("records each host's cluster with its quorum, nodes and Ceph monitors; unknown nodes have no host", async () => {
    expect(await refreshClusterGroups(database.db, { all: true })).toBe(3);
    const ceph = await group("ceph-lab");
    expect(ceph).toMatchObject({
      policy: "cluster",
      hyperConverged: true,
      quorate: true,
      refreshError: null,
    });
    expect(ceph!.refreshedAt).not.toBeNull();
    expect(ceph!.nodes).toEqual([
      {
        name: "pve1",
        ip: "10.10.10.11",
        online: true,
        cephMon: true,
        hostId: hostIds.get("pve1"),
        targetId: null,
        runningGuests: 0,
      },
      {
        name: "pve2",
        ip: "10.10.10.12",
        online: true,
        cephMon: true,
        hostId: hostIds.get("pve2"),
        targetId: null,
        runningGuests: 0,
      },
      {
        name: "pve3",
        ip: "10.10.10.13",
        online: true,
        cephMon: true,
        hostId: null,
        targetId: null,
        runningGuests: 0,
      },
    ]);
  });

  it("a cluster where Proxmox answers that Ceph is not installed is not hyper-converged, and that is no error", async () => {
    const plain = await group("plain-lab");
    expect(plain).toMatchObject({ hyperConverged: false, quorate: true, refreshError: null });
    expect(plain!.nodes.map((n) => [n.name, n.cephMon, n.hostId])).toEqual([
      ["px1", false, hostIds.get("px1")],
      ["px2", false, null],
    ]);
  });

  it("Ceph that could not be asked keeps the last known hyper-converged state and monitors, saying why", async () => {
    const dead = await closedPort();
    await refreshClusterGroups(database.db, {
      all: true,
      connect: async (host) => {
        const real = await hostApi(database.db, host);
        const unreachable = await hostApi(database.db, { ...host, apiPort: dead });
        return {
          clusterStatus: () => real.clusterStatus(),
          joinInfo: () => real.joinInfo(),
          ceph: () => unreachable.ceph(),
          runningGuests: () => real.runningGuests(),
        };
      },
    });
    const ceph = await group("ceph-lab");
    expect(ceph!.hyperConverged).toBe(true);
    expect(ceph!.nodes.every((n) => n.cephMon)).toBe(true);
    expect(ceph!.refreshError).toMatch(/^could not ask Ceph: .*ECONNREFUSED/);
    // A cluster known to have no Ceph keeps that too, and says it could not ask.
    expect(await group("plain-lab")).toMatchObject({ hyperConverged: false });
    expect((await group("plain-lab"))!.refreshError).toMatch(/^could not ask Ceph/);
    await refreshClusterGroups(database.db, { all: true });
    expect((await group("ceph-lab"))!.refreshError).toBeNull();
    expect((await group("plain-lab"))!.hyperConverged).toBe(false);
  });

  it("a periodic refresh asks nobody while every host was asked within five minutes, and every host once one is due (membership is judged among all answers)", async () => {
    expect(await refreshClusterGroups(database.db)).toBe(0);
    const later = new Date(Date.now() + 6 * 60_000);
    expect(await refreshClusterGroups(database.db, { now: () => later })).toBe(3);
    // One host asked long ago (a new one, or one the last round missed): all are asked again.
    await database.db
      .update(powerClusterMemberships)
      .set({ askedAt: new Date(Date.now() - 6 * 60_000) })
      .where(eq(powerClusterMemberships.hostId, hostIds.get("px1")!));
    expect(await refreshClusterGroups(database.db)).toBe(3);
  });

  it("the Refresh button queues one job (pressing twice changes nothing) that the worker runs, asking every host", async () => {
    // Both presses land before a worker runs: one that took the first job at once would make
    // the second press a job of its own, rightly (a refresh already under way may miss news).
    const before = new Date();
    await requestClusterRefresh(database.db);
    await requestClusterRefresh(database.db);
    const jobs = await database.pool.query(
      `select count(*)::int as n from graphile_worker.jobs where task_identifier = $1`,
      [CLUSTER_REFRESH_TASK],
    );
    expect(jobs.rows[0].n).toBe(1);
    const worker = await startWorker({
      connectionString: database.url,
      pipelines: {},
      concurrency: 1,
      pollIntervalMs: 200,
      periodicChecks: false,
      log: () => {},
    });
    try {
      await waitFor("every host asked by the worker", async () => {
        const rows = await database.db.select().from(powerClusterMemberships);
        return rows.length === 3 && rows.every((row) => row.askedAt >= before);
      });
    } finally {
      await worker.stop();
    }
  });

  it("a host that joins shows up on its node; the last known member leaving for standalone ends the group", async () => {
    hostIds.set("pve3", await seedActiveLabHost(database.db, apiOf(cephLab, "pve3")));
    await refreshClusterGroups(database.db, { all: true });
    expect((await group("ceph-lab"))!.nodes.find((n) => n.name === "pve3")!.hostId).toBe(
      hostIds.get("pve3"),
    );

    // px1 is reinstalled as a standalone node: its API now answers without a cluster entry.
    await pointHostAt(database.db, hostIds.get("px1")!, {
      nodeName: "solo",
      port: solo.api.port,
      certSha256: solo.api.certSha256,
      token: solo.pve.token!,
    });
    await refreshClusterGroups(database.db, { all: true });
    expect(await group("plain-lab")).toBeUndefined();
    expect(await membership(hostIds.get("px1")!)).toMatchObject({
      clusterId: null,
      askError: null,
    });
    expect((await membership(hostIds.get("px1")!))!.checkedAt).not.toBeNull();
    expect((await listLooseHosts(database.db)).standalone.map((h) => h.hostId)).toEqual([
      hostIds.get("px1"),
    ]);
  });

  it("a host that never answered is in no cluster and not standalone: its membership is not known, with the reason", async () => {
    const silent = await seedActiveLabHost(database.db, {
      ...apiOf(cephLab, "pve1"),
      nodeName: "silent",
      port: await closedPort(),
    });
    await refreshClusterGroups(database.db, { all: true });
    const loose = await listLooseHosts(database.db);
    expect(loose.standalone.map((h) => h.hostId)).not.toContain(silent);
    expect(loose.unknown).toEqual([
      {
        hostId: silent,
        name: expect.stringMatching(/^silent-/),
        askError: expect.stringMatching(/ECONNREFUSED/),
      },
    ]);
    expect((await loadClusterGroups(database.db)).map((g) => g.name)).toEqual(["ceph-lab"]);
  });

  it("a node the cluster reports offline is shown offline while the others answer", async () => {
    await cephLab.powerOff("pve3");
    await refreshClusterGroups(database.db, { all: true });
    const ceph = await group("ceph-lab");
    expect(ceph!.refreshError).toBeNull();
    expect(ceph!.nodes.map((n) => [n.name, n.online])).toEqual([
      ["pve1", true],
      ["pve2", true],
      ["pve3", false],
    ]);
    const pve3 = await membership(hostIds.get("pve3")!);
    expect(pve3!.askError).toMatch(/ECONNREFUSED|refused/);
    expect(pve3!.clusterId).toBe(ceph!.id);
  });

  it("when no member can be asked, the group keeps its last known membership with the reason — never standalone", async () => {
    const before = (await group("ceph-lab"))!;
    for (const node of ["pve1", "pve2"]) {
      await database.db
        .update(hosts)
        .set({ apiCertSha256: "00:11:22:33" })
        .where(eq(hosts.id, hostIds.get(node)!));
    }
    await refreshClusterGroups(database.db, { all: true });
    const after = (await group("ceph-lab"))!;
    expect(after.refreshError).toMatch(/^could not ask .*certificate/i);
    expect(after.refreshedAt).toBe(before.refreshedAt);
    expect(after.nodes).toEqual(before.nodes);
    expect(after.hyperConverged).toBe(true);
    for (const node of ["pve1", "pve2", "pve3"]) {
      const row = await membership(hostIds.get(node)!);
      expect(row!.clusterId).toBe(after.id);
      expect(row!.askError).not.toBeNull();
    }
  });
});
