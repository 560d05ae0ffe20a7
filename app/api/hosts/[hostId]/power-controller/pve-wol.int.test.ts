import { asc, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import {
  clusterNodePower,
  startLabPowerControllers,
  type LabPowerControllers,
} from "@/lab/power-controllers";
import { setNodeConfig } from "@/lab/pve/cluster/node-config";
import { startLabCluster, type LabCluster } from "@/lab/pve/cluster/start";
import { waitUntil } from "@/lab/processes";
import { getDb } from "@/lib/db/client";
import { auditLog, events } from "@/lib/db/schema";
import { refreshClusterGroups } from "@/lib/power/cluster-refresh/refresh-cluster-groups";
import { runSelfTest } from "@/lib/power/self-test/run-self-test";
import type { SelfTestCheck } from "@/lib/power/self-test/verdict";
import { ProxmoxClient } from "@/lib/proxmox/client";
import { createTestUser, type TestUser } from "@/test/auth";
import { seedActiveLabHost } from "@/test/fixtures/active-lab-host";
import { registerProcessTestDatabase, routeParams } from "@/test/process-database";

import { POST as POWER_ON } from "./power-on/route";
import { PUT } from "./route";

/*
 * Wake-on-LAN through a cluster member (issue 30, item 1): Proxmox's own
 * `POST /nodes/{node}/wakeonlan`, asked by the console of a member that is up, never of the
 * node itself. Against a 3-node lab cluster whose API implements the route as pve-manager does
 * (the node config file, "No wake on LAN MAC address defined", the packet from the member that
 * handles the request to its broadcast-address) and the lab's Wake-on-LAN listener on loopback,
 * which powers the node on.
 */

registerProcessTestDatabase();
let cluster: LabCluster;
let bmc: LabPowerControllers;
let admin: TestUser;
let operator: TestUser;
const hostIds = new Map<string, string>();
let loneHostId: string;

beforeAll(async () => {
  const db = getDb();
  [admin, operator] = await Promise.all([
    createTestUser(db, "admin"),
    createTestUser(db, "operator"),
  ]);
  cluster = await startLabCluster({ nodes: 3, apiAuthFailureDelayMs: 0 });
  bmc = await startLabPowerControllers({
    nodes: cluster.nodes.map((n) => clusterNodePower(cluster, n.name)),
  });
  // Proxmox sends to UDP 9 ("discard"); the lab's listener has its own port.
  cluster.model.wakeOnLanPort = bmc.node("pve1").wol.port;
  for (const node of cluster.nodes) {
    hostIds.set(
      node.name,
      await seedActiveLabHost(db, {
        nodeName: node.name,
        port: node.api.port,
        certSha256: node.api.certSha256,
        token: cluster.token,
      }),
    );
  }
  // A host whose API never answered: the console knows it in no cluster.
  loneHostId = await seedActiveLabHost(db, {
    nodeName: "lone",
    port: 1,
    certSha256: cluster.nodes[0]!.api.certSha256,
    token: cluster.token,
  });
  // The real discovery: each host's API says which cluster it is in.
  await refreshClusterGroups(db, { all: true, timeoutMs: 3000 });
}, 120_000);

afterAll(async () => {
  await bmc?.stop();
  await cluster?.stop();
});

const root = () => cluster.nodes[0]!.root;
const online = (name: string) => cluster.model.node(name)!.online;
/** `pvenode config set --wakeonlan …` on `node` (pmxcfs shares the file with every member). */
const setWakeOnLan = (node: string, value: string | null) =>
  setNodeConfig(root(), node, "wakeonlan", value);

async function call(
  handler: typeof PUT,
  user: TestUser,
  hostId: string,
  method: string,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await handler(
    new Request(`http://test/api/hosts/${hostId}/power-controller`, {
      method,
      headers: user.authHeaders({ "content-type": "application/json" }),
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    }),
    routeParams({ hostId }),
  );
  const text = await response.text();
  return {
    status: response.status,
    body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
  };
}
const powerOn = (hostId: string) => call(POWER_ON as typeof PUT, operator, hostId, "POST");

async function wakeOnLanCheck(hostId: string): Promise<SelfTestCheck> {
  const result = await runSelfTest(getDb(), { occasion: "button", timeoutMs: 3000 });
  return result.checks.find((c) => c.key === `power-controller-wakeonlan:${hostId}`)!;
}

async function lastPowerOnEvent(hostId: string) {
  const rows = await getDb()
    .select()
    .from(events)
    .where(eq(events.hostId, hostId))
    .orderBy(asc(events.id));
  return rows.filter((e) => e.kind === "host.power_on").at(-1)!;
}

describe("Wake-on-LAN through a cluster member", () => {
  it("is refused for a host in no cluster, with a field error; a member takes it with nothing else", async () => {
    const lone = await call(PUT, admin, loneHostId, "PUT", { kind: "pve-wol" });
    expect(lone.status).toBe(400);
    expect(Object.keys(lone.body.fieldErrors as object)).toEqual(["kind"]);
    expect(JSON.stringify(lone.body.fieldErrors)).toMatch(/not a member of a Proxmox cluster/);
    for (const kind of [["pve-wol"], "pve-wol; rm -rf /", { $ne: 1 }, ""]) {
      const hostile = await call(PUT, admin, hostIds.get("pve2")!, "PUT", { kind });
      expect(hostile.status, JSON.stringify(kind)).toBe(400);
      expect(Object.keys(hostile.body.fieldErrors as object)).toContain("kind");
    }

    const hostId = hostIds.get("pve2")!;
    // Fields of other kinds that come along are dropped, never stored.
    const put = await call(PUT, admin, hostId, "PUT", {
      kind: "pve-wol",
      mac: "$(reboot)",
      broadcastAddress: "-x",
      password: "nope",
    });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({
      kind: "pve-wol",
      mac: null,
      broadcastAddress: null,
      address: null,
      hasPassword: false,
    });
    const audit = await getDb()
      .select()
      .from(auditLog)
      .where(eq(auditLog.target, `host:${hostId}`));
    expect(audit.map((a) => a.action)).toContain("host.power_controller_set");
  });

  it("the self-test reads the node's wakeonlan setting through a member and names what to fix", async () => {
    const hostId = hostIds.get("pve2")!;
    setWakeOnLan("pve2", null);
    const missing = await wakeOnLanCheck(hostId);
    expect(missing.verdict).toBe("failed");
    expect(missing.reason).toContain("pvenode config set --wakeonlan");
    expect(missing.reason).toContain("/etc/pve/nodes/pve2/config");

    setWakeOnLan("pve2", bmc.node("pve2").wol.mac);
    const found = await wakeOnLanCheck(hostId);
    expect(found.verdict).toBe("ok");
    expect(found.reason).toContain(bmc.node("pve2").wol.mac);
  });

  it("powers the node on through the first member that answers — never the node itself — and the packet wakes it", async () => {
    const hostId = hostIds.get("pve2")!;
    setWakeOnLan("pve2", `mac=${bmc.node("pve2").wol.mac}`);
    // The members send to their own broadcast address, here the lab's loopback listener.
    for (const member of ["pve1", "pve3"])
      setWakeOnLan(member, `${bmc.node(member).wol.mac},broadcast-address=127.0.0.1`);
    await cluster.powerOff("pve2");
    const requests = bmc.node("pve2").chassis.powerOnRequests;
    const before = requests.length;

    const answer = await powerOn(hostId);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ result: "sent", after: null });
    await waitUntil(() => online("pve2"), { timeoutMs: 30_000, what: "pve2 woken" });
    expect(requests.slice(before)).toEqual(["wake-on-lan"]);
    expect((await lastPowerOnEvent(hostId)).message).toMatch(
      /pve1 sent the magic packet for pve2 \(MAC 52:54:00:c1:00:02/,
    );

    // pve1 down as well: the next member that answers, pve3, sends it.
    await cluster.powerOff("pve1");
    await cluster.powerOff("pve2");
    const again = await powerOn(hostId);
    expect(again.status).toBe(200);
    await waitUntil(() => online("pve2"), { timeoutMs: 30_000, what: "pve2 woken by pve3" });
    expect((await lastPowerOnEvent(hostId)).message).toMatch(/pve3 sent the magic packet/);
    expect(online("pve1")).toBe(false);
    await cluster.powerOn("pve1");
  });

  it("no MAC in the node's config: refused by Proxmox, said with what to set; the node stays off", async () => {
    const hostId = hostIds.get("pve2")!;
    setWakeOnLan("pve2", null);
    await cluster.powerOff("pve2");
    const before = bmc.node("pve2").chassis.powerOnRequests.length;
    const answer = await powerOn(hostId);
    expect(answer.status).toBe(503);
    expect(answer.body.error).toMatch(/Proxmox knows no Wake-on-LAN MAC for pve2/);
    expect(answer.body.error).toMatch(/pvenode config set --wakeonlan/);
    expect(bmc.node("pve2").chassis.powerOnRequests.length).toBe(before);
    expect(online("pve2")).toBe(false);
    setWakeOnLan("pve2", bmc.node("pve2").wol.mac);
  });

  it("no other member up: 503 saying the packet must come from a member that is up", async () => {
    const hostId = hostIds.get("pve2")!;
    await cluster.powerOff("pve1");
    await cluster.powerOff("pve3");
    try {
      const answer = await powerOn(hostId);
      expect(answer.status).toBe(503);
      expect(answer.body.error).toMatch(/no other member of the cluster answers its API/);
      expect(online("pve2")).toBe(false);
    } finally {
      await cluster.powerOn("pve1");
      await cluster.powerOn("pve3");
    }
  });

  it("the lab's route is Proxmox's: a node cannot wake itself, and an unknown node is refused", async () => {
    const pve1 = cluster.nodes.find((n) => n.name === "pve1")!;
    const client = new ProxmoxClient({
      baseUrl: pve1.api.url,
      node: "pve1",
      tokenId: cluster.token.id,
      tokenSecret: cluster.token.secret,
      certSha256: pve1.api.certSha256,
      timeoutMs: 5000,
    });
    await expect(client.wakeOnLan("pve1")).rejects.toThrow(
      /'pve1' is local node, cannot wake my self!/,
    );
    await expect(client.wakeOnLan("pve9")).rejects.toThrow(/no such cluster node 'pve9'/);
    // The MAC it answers is the one it sent for.
    setWakeOnLan("pve3", `${bmc.node("pve3").wol.mac},broadcast-address=127.0.0.1`);
    expect(await client.wakeOnLan("pve3")).toBe(bmc.node("pve3").wol.mac);
  });
});
