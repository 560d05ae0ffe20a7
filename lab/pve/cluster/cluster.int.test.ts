import fs from "node:fs";
import path from "node:path";

import { afterEach, describe, expect, it } from "vitest";

import { waitUntil as poll } from "../../processes";
import { startLabCluster, type LabCluster, type StartLabClusterOptions } from "./start";
import { clusterCall } from "./test-helpers";

/** The lab cluster over real HTTPS on 127.0.0.1: what the Power II sequence is built against. */

const FAST = { guestShutdownMs: 300, haDisarmMs: 300, haRecoveryMs: 300, nodeShutdownDelayMs: 200 };
const OPS_PRIVS = [
  "Sys.Audit",
  "VM.Audit",
  "VM.PowerMgmt",
  "Sys.Console",
  "Sys.Modify",
  "Sys.PowerMgmt",
  "VM.Migrate",
];

/** Waits for something the lab does by itself; generous, as the test machine may be busy. */
const waitUntil = (
  check: () => boolean | Promise<boolean>,
  options: { what: string; timeoutMs?: number },
) => poll(check, { what: options.what, timeoutMs: 20_000 });

let cluster: LabCluster | undefined;
afterEach(async () => {
  await cluster?.stop();
  cluster = undefined;
});

async function start(options: Partial<StartLabClusterOptions> = {}) {
  cluster = await startLabCluster({ nodes: 3, timing: FAST, ...options });
  const ops = cluster.addToken("ops", OPS_PRIVS);
  const [pve1, pve2, pve3] = cluster.nodes as [
    LabCluster["nodes"][0],
    LabCluster["nodes"][0],
    LabCluster["nodes"][0],
  ];
  return { c: cluster, ops, pve1, pve2, pve3 };
}

type Row = Record<string, unknown>;

describe("lab cluster", () => {
  it("answers /cluster/status on every node with itself local and quorum from the online majority", async () => {
    const { c, ops, pve1, pve2, pve3 } = await start();
    for (const node of [pve1, pve2, pve3]) {
      const rows = (await clusterCall(node, "GET", "/cluster/status", ops)).data as Row[];
      expect(rows[0]).toMatchObject({ type: "cluster", name: "lab", nodes: 3, quorate: 1 });
      const nodes = rows.filter((r) => r.type === "node");
      expect(nodes.map((r) => [r.name, r.local, r.online])).toEqual(
        ["pve1", "pve2", "pve3"].map((n) => [n, n === node.name ? 1 : 0, 1]),
      );
    }
    await c.powerOff("pve3");
    await expect(clusterCall(pve3, "GET", "/cluster/status", ops)).rejects.toThrow(/ECONNREFUSED/);
    let rows = (await clusterCall(pve1, "GET", "/cluster/status", ops)).data as Row[];
    expect(rows.find((r) => r.name === "pve3")).toMatchObject({ online: 0 });
    expect(rows[0]).toMatchObject({ quorate: 1 });
    await c.powerOff("pve2");
    rows = (await clusterCall(pve1, "GET", "/cluster/status", ops)).data as Row[];
    expect(rows[0]).toMatchObject({ quorate: 0 });
    // Without quorum etc/pve is read-only: HA cannot be disarmed.
    const disarm = await clusterCall(pve1, "POST", "/cluster/ha/status/disarm-ha", ops, {
      "resource-mode": "ignore",
    });
    expect([disarm.status, disarm.message]).toEqual([500, "cluster not ready - no quorum?"]);
  });

  it("answers /cluster/config/join from corosync.conf: each node with the fingerprint of the certificate its pveproxy serves, or will serve once restarted", async () => {
    const { c, ops, pve1, pve2, pve3 } = await start();
    type Join = {
      nodelist: Row[];
      preferred_node: string;
      config_digest: string;
      totem: Row;
    };
    const join = async (node: typeof pve1) =>
      (await clusterCall(node, "GET", "/cluster/config/join", ops)).data as Join;
    const first = await join(pve1);
    expect(first.preferred_node).toBe("pve1");
    expect(first.totem).toMatchObject({ cluster_name: "lab" });
    expect(first.config_digest).toMatch(/^[0-9a-f]{40}$/);
    const byName = (answer: Join) =>
      Object.fromEntries(answer.nodelist.map((n) => [n.name as string, n]));
    for (const [i, node] of [pve1, pve2, pve3].entries()) {
      expect(byName(first)[node.name]).toEqual({
        name: node.name,
        nodeid: i + 1,
        quorum_votes: 1,
        ring0_addr: node.ip,
        pve_addr: node.ip,
        pve_fp: node.api.certSha256,
      });
    }
    // Every member reads the same pmxcfs: the same list, the same digest.
    const second = await join(pve2);
    expect(second.preferred_node).toBe("pve2");
    expect(second.config_digest).toBe(first.config_digest);
    expect(byName(second)).toEqual(byName(first));

    // An operator's own certificate: named at once, served once pveproxy restarted.
    const served = pve3.api.certSha256;
    const custom = await c.installCustomCertificate("pve3", { restart: false });
    expect(custom).not.toBe(served);
    expect(byName(await join(pve1)).pve3!.pve_fp).toBe(custom);
    expect(pve3.api.certSha256).toBe(served);
    await c.installCustomCertificate("pve3", { restart: true });
    expect(pve3.api.certSha256).toBe(byName(await join(pve2)).pve3!.pve_fp);
    expect((await clusterCall(pve3, "GET", "/cluster/status", ops)).status).toBe(200);

    c.faults.joinInfoFails = ["pve2"];
    const failed = await clusterCall(pve2, "GET", "/cluster/config/join", ops);
    expect([failed.status, failed.message]).toEqual([
      500,
      "node is not in a cluster, no join info available!",
    ]);
    const audit = c.addToken("noaudit", ["VM.Audit"]);
    expect((await clusterCall(pve1, "GET", "/cluster/config/join", audit)).status).toBe(403);
  });

  it("lists guests with hastate for a token with VM.Audit and an empty list (200) for one without", async () => {
    const { c, ops, pve2 } = await start({
      guests: [
        { vmid: 100, type: "qemu", node: "pve1", ha: true },
        { vmid: 200, type: "lxc", node: "pve2" },
        { vmid: 9000, type: "qemu", node: "pve3", template: true },
      ],
    });
    const rows = (await clusterCall(pve2, "GET", "/cluster/resources", ops, { type: "vm" }))
      .data as Row[];
    expect(
      rows.map((r) => [r.id, r.vmid, r.node, r.type, r.status, r.template, r.hastate]),
    ).toEqual([
      ["qemu/100", 100, "pve1", "qemu", "running", 0, "started"],
      ["lxc/200", 200, "pve2", "lxc", "running", 0, undefined],
      ["qemu/9000", 9000, "pve3", "qemu", "stopped", 1, undefined],
    ]);
    const blind = c.addToken("blind", ["Sys.Audit", "VM.PowerMgmt"]);
    const answer = await clusterCall(pve2, "GET", "/cluster/resources", blind, { type: "vm" });
    expect([answer.status, answer.data]).toEqual([200, []]);
    const lxc = await clusterCall(pve2, "GET", "/nodes/pve2/lxc", blind);
    expect([lxc.status, lxc.data]).toEqual([200, []]);
    expect(
      ((await clusterCall(pve2, "GET", "/nodes/pve2/lxc", ops)).data as Row[]).map((r) => r.vmid),
    ).toEqual([200]);
  });

  it("shuts a guest down asynchronously: a UPID at once, stopped after its shutdown time", async () => {
    const { ops, pve1, pve2 } = await start({
      guests: [{ vmid: 100, type: "qemu", node: "pve1", shutdownMs: 2000 }],
    });
    const answer = await clusterCall(pve2, "POST", "/nodes/pve1/qemu/100/status/shutdown", ops);
    expect(answer.status).toBe(200);
    expect(answer.data).toMatch(
      /^UPID:pve1:[0-9A-F]{8}:[0-9A-F]{8}:[0-9A-F]{8}:qmshutdown:100:ops@pve!token:$/,
    );
    const status = async () =>
      ((await clusterCall(pve1, "GET", "/nodes/pve1/qemu", ops)).data as Row[])[0]!.status;
    expect(await status()).toBe("running");
    await waitUntil(async () => (await status()) === "stopped", {
      timeoutMs: 6000,
      what: "VM 100 stopped",
    });
    const current = await clusterCall(pve1, "GET", "/nodes/pve1/qemu/100/status/current", ops);
    expect(current.data).toMatchObject({ vmid: 100, status: "stopped", ha: { managed: 0 } });
    const task = await clusterCall(
      pve1,
      "GET",
      `/nodes/pve1/tasks/${encodeURIComponent(answer.data as string)}/status`,
      ops,
    );
    expect(task.data).toMatchObject({ status: "stopped", exitstatus: "OK", type: "qmshutdown" });
  });

  it("a hanging guest outlives its shutdown timeout and ends only by stop or forceStop", async () => {
    const { c, ops, pve1 } = await start({
      guests: [
        { vmid: 101, type: "qemu", node: "pve1" },
        { vmid: 201, type: "lxc", node: "pve1" },
      ],
    });
    c.faults.hangOnShutdown = [101, 201];
    const upid = (
      await clusterCall(pve1, "POST", "/nodes/pve1/qemu/101/status/shutdown", ops, { timeout: "1" })
    ).data as string;
    const task = async () =>
      (await clusterCall(pve1, "GET", `/nodes/pve1/tasks/${encodeURIComponent(upid)}/status`, ops))
        .data as Row;
    await waitUntil(async () => (await task()).status === "stopped", {
      timeoutMs: 4000,
      what: "shutdown task ends",
    });
    expect((await task()).exitstatus).toBe("VM quit/powerdown failed");
    expect(c.model.guests.get(101)!.status).toBe("running");
    await clusterCall(pve1, "POST", "/nodes/pve1/qemu/101/status/stop", ops);
    await waitUntil(() => c.model.guests.get(101)!.status === "stopped", {
      what: "VM 101 stopped",
    });
    await clusterCall(pve1, "POST", "/nodes/pve1/lxc/201/status/shutdown", ops, {
      timeout: "1",
      forceStop: "1",
    });
    await waitUntil(() => c.model.guests.get(201)!.status === "stopped", {
      timeoutMs: 4000,
      what: "CT 201 forced",
    });
  });

  it("checks VM.PowerMgmt on the guest before powering it", async () => {
    const { c, pve1 } = await start({ guests: [{ vmid: 100, type: "qemu", node: "pve1" }] });
    const viewer = c.addToken("viewer", ["Sys.Audit", "VM.Audit"]);
    const answer = await clusterCall(pve1, "POST", "/nodes/pve1/qemu/100/status/shutdown", viewer);
    expect([answer.status, answer.message]).toEqual([
      403,
      "Permission check failed (/vms/100, VM.PowerMgmt)",
    ]);
    expect(c.model.guests.get(100)!.status).toBe("running");
  });

  it("stopall skips HA-managed guests unless vms names them, and counts them unmanaged once disarmed in ignore mode", async () => {
    const { c, ops, pve1 } = await start({
      timing: { ...FAST, haDisarmMs: 2000 },
      guests: [
        { vmid: 100, type: "qemu", node: "pve1", ha: true },
        { vmid: 101, type: "qemu", node: "pve1" },
        { vmid: 200, type: "lxc", node: "pve1" },
      ],
    });
    const status = (vmid: number) => c.model.guests.get(vmid)!.status;
    await clusterCall(pve1, "POST", "/nodes/pve1/stopall", ops);
    await waitUntil(() => status(101) === "stopped" && status(200) === "stopped", {
      what: "unmanaged stopped",
    });
    await new Promise((r) => setTimeout(r, 500));
    expect(status(100)).toBe("running");

    const disarm = await clusterCall(pve1, "POST", "/cluster/ha/status/disarm-ha", ops, {
      "resource-mode": "ignore",
    });
    expect([disarm.status, disarm.data]).toEqual([200, null]);
    const fencing = async () =>
      ((await clusterCall(pve1, "GET", "/cluster/ha/status/current", ops)).data as Row[]).find(
        (r) => r.type === "fencing",
      )!;
    expect((await fencing())["armed-state"]).toBe("disarming");
    await waitUntil(async () => (await fencing())["armed-state"] === "disarmed", {
      what: "disarmed",
    });
    await clusterCall(pve1, "POST", "/nodes/pve1/stopall", ops);
    await waitUntil(() => status(100) === "stopped", { what: "HA guest stopped by stopall" });
  });

  it("HA armed: a guest whose node goes off is started on another online node", async () => {
    const { c, ops, pve2 } = await start({
      guests: [{ vmid: 100, type: "qemu", node: "pve1", ha: true }],
    });
    await c.powerOff("pve1");
    const entry = async () =>
      (
        (await clusterCall(pve2, "GET", "/cluster/resources", ops, { type: "vm" })).data as Row[]
      )[0]!;
    expect(await entry()).toMatchObject({ node: "pve1", status: "unknown" });
    await waitUntil(async () => (await entry()).node !== "pve1", { what: "HA recovery" });
    expect(await entry()).toMatchObject({ status: "running", hastate: "started" });
    expect(["pve2", "pve3"]).toContain((await entry()).node);
    // pmxcfs: the config moved with it, and every node sees the same tree.
    const now = (await entry()).node as string;
    for (const node of c.nodes) {
      expect(fs.existsSync(path.join(node.root, `etc/pve/nodes/${now}/qemu-server/100.conf`))).toBe(
        true,
      );
      expect(fs.existsSync(path.join(node.root, "etc/pve/nodes/pve1/qemu-server/100.conf"))).toBe(
        false,
      );
    }
  });

  it("HA disarmed in ignore mode: nothing moves when a node goes off", async () => {
    const { c, ops, pve2 } = await start({
      guests: [{ vmid: 100, type: "qemu", node: "pve1", ha: true }],
    });
    await clusterCall(pve2, "POST", "/cluster/ha/status/disarm-ha", ops, {
      "resource-mode": "ignore",
    });
    await waitUntil(() => c.model.armedState === "disarmed", { what: "disarmed" });
    await c.powerOff("pve1");
    await new Promise((r) => setTimeout(r, FAST.haRecoveryMs * 3));
    const rows = (await clusterCall(pve2, "GET", "/cluster/resources", ops, { type: "vm" }))
      .data as Row[];
    expect(rows[0]).toMatchObject({ node: "pve1", status: "unknown", hastate: "ignored" });
    const arm = await clusterCall(pve2, "POST", "/cluster/ha/status/arm-ha", ops);
    expect(arm.status).toBe(200);
    expect(c.model.armedState).toBe("armed");
  });

  it("a node told to shut down stops its own guests, powers off, and HA moves its HA guest while armed", async () => {
    const { c, ops, pve1, pve2 } = await start({
      guests: [
        { vmid: 100, type: "qemu", node: "pve1", ha: true },
        { vmid: 101, type: "qemu", node: "pve1" },
      ],
    });
    const answer = await clusterCall(pve2, "POST", "/nodes/pve1/status", ops, {
      command: "shutdown",
    });
    expect([answer.status, answer.data]).toEqual([200, null]);
    await waitUntil(() => !c.model.node("pve1")!.online, { what: "pve1 off" });
    await expect(clusterCall(pve1, "GET", "/version", ops)).rejects.toThrow(/ECONNREFUSED/);
    await waitUntil(() => c.model.guests.get(100)!.node !== "pve1", { what: "HA recovery" });
    expect(c.model.guests.get(100)!.status).toBe("running");
    expect(c.model.guests.get(101)).toMatchObject({ node: "pve1", status: "stopped" });
  });

  it("shutdown_policy=freeze: the node's HA guest dies with it and is not recovered", async () => {
    const { c, ops, pve2 } = await start({
      haShutdownPolicy: "freeze",
      guests: [{ vmid: 100, type: "qemu", node: "pve1", ha: true }],
    });
    const options = (await clusterCall(pve2, "GET", "/cluster/options", ops)).data;
    expect(options).toMatchObject({ ha: { shutdown_policy: "freeze" } });
    await clusterCall(pve2, "POST", "/nodes/pve1/status", ops, { command: "shutdown" });
    await waitUntil(() => !c.model.node("pve1")!.online, { what: "pve1 off" });
    await new Promise((r) => setTimeout(r, FAST.haRecoveryMs * 3));
    expect(c.model.guests.get(100)).toMatchObject({ node: "pve1", status: "stopped" });
  });

  it("disarm exists only on 9.2: the 9.1 index does not list it and the call is not implemented", async () => {
    const { ops, pve1 } = await start({ pveVersion: "9.1" });
    expect((await clusterCall(pve1, "GET", "/version", ops)).data).toMatchObject({
      release: "9.1",
    });
    const index = (await clusterCall(pve1, "GET", "/cluster/ha/status", ops)).data as Row[];
    expect(index.map((r) => r.name)).not.toContain("disarm-ha");
    const answer = await clusterCall(pve1, "POST", "/cluster/ha/status/disarm-ha", ops, {
      "resource-mode": "ignore",
    });
    expect(answer.status).toBe(501);
    const current = (await clusterCall(pve1, "GET", "/cluster/ha/status/current", ops))
      .data as Row[];
    expect(current.some((r) => r.type === "fencing")).toBe(false);
  });

  it("disarm needs Sys.Console on /, which the console's seeded token does not hold", async () => {
    const { c, pve1 } = await start();
    const index = (await clusterCall(pve1, "GET", "/cluster/ha/status", c.token)).data as Row[];
    expect(index.map((r) => r.name)).toEqual(expect.arrayContaining(["disarm-ha", "arm-ha"]));
    const answer = await clusterCall(pve1, "POST", "/cluster/ha/status/disarm-ha", c.token, {
      "resource-mode": "ignore",
    });
    expect([answer.status, answer.message]).toEqual([
      403,
      "Permission check failed (/, Sys.Console)",
    ]);
    expect(c.model.armedState).toBe("armed");
  });

  it("bulk shutdown stops the named guests across nodes as one task", async () => {
    const { c, ops, pve3 } = await start({
      guests: [
        { vmid: 100, type: "qemu", node: "pve1" },
        { vmid: 200, type: "lxc", node: "pve2" },
        { vmid: 300, type: "qemu", node: "pve3" },
      ],
    });
    const answer = await clusterCall(pve3, "POST", "/cluster/bulk-action/guest/shutdown", ops, {
      vms: ["100", "200"],
      timeout: "5",
      "max-workers": "2",
    });
    expect(answer.data).toMatch(/^UPID:pve3:.*:bulkshutdown:/);
    await waitUntil(
      () =>
        c.model.guests.get(100)!.status === "stopped" &&
        c.model.guests.get(200)!.status === "stopped",
      {
        what: "both stopped",
      },
    );
    expect(c.model.guests.get(300)!.status).toBe("running");
  });

  it("Ceph: monitors, flags set one by one (synchronous) and in bulk (a task), and the ignored-bulk fault", async () => {
    const { c, ops, pve1 } = await start({ ceph: { monitors: ["pve2", "pve3"] } });
    const status = (await clusterCall(pve1, "GET", "/cluster/ceph/status", ops)).data as {
      monmap: { mons: { name: string }[] };
    };
    expect(status.monmap.mons.map((m) => m.name)).toEqual(["pve2", "pve3"]);
    const flags = async () =>
      ((await clusterCall(pve1, "GET", "/cluster/ceph/flags", ops)).data as Row[])
        .filter((f) => f.value === 1)
        .map((f) => f.name);
    expect(await flags()).toEqual([]);
    expect(
      (await clusterCall(pve1, "PUT", "/cluster/ceph/flags/noout", ops, { value: "1" })).data,
    ).toBeNull();
    expect(await flags()).toEqual(["noout"]);
    c.faults.bulkFlagsIgnored = true;
    const ignored = await clusterCall(pve1, "PUT", "/cluster/ceph/flags", ops, { nobackfill: "1" });
    expect(ignored.data).toMatch(/^UPID:pve1:.*:cephsetflags:/);
    await new Promise((r) => setTimeout(r, 500));
    expect(await flags()).toEqual(["noout"]);
    c.faults.bulkFlagsIgnored = false;
    await clusterCall(pve1, "PUT", "/cluster/ceph/flags", ops, {
      nobackfill: "1",
      norecover: "1",
      norebalance: "1",
    });
    await waitUntil(async () => (await flags()).length === 4, { what: "bulk flags set" });
    c.faults.singleFlagIgnored = true;
    expect(
      (await clusterCall(pve1, "PUT", "/cluster/ceph/flags/noscrub", ops, { value: "1" })).status,
    ).toBe(200);
    expect(await flags()).not.toContain("noscrub");
    c.faults.singleFlagIgnored = false;
    const denied = await clusterCall(pve1, "PUT", "/cluster/ceph/flags/noout", c.token, {
      value: "0",
    });
    expect([denied.status, denied.message]).toEqual([
      403,
      "Permission check failed (/, Sys.Modify)",
    ]);
  });

  it("Ceph below min_size: a guest still running on the pool freezes, its shutdown and even its stop hang until the OSDs are back", async () => {
    const { c, ops, pve3 } = await start({
      ceph: true,
      guests: [{ vmid: 300, type: "qemu", node: "pve3", storage: "ceph" }],
    });
    // The naive order: two nodes go down while a Ceph guest still runs on the third.
    await c.powerOff("pve1");
    await c.powerOff("pve2");
    const health = (await clusterCall(pve3, "GET", "/cluster/ceph/status", ops)).data as {
      health: { status: string };
    };
    expect(health.health.status).toBe("HEALTH_ERR");
    const upid = (
      await clusterCall(pve3, "POST", "/nodes/pve3/qemu/300/status/shutdown", ops, {
        timeout: "1",
        forceStop: "1",
      })
    ).data as string;
    await new Promise((r) => setTimeout(r, 1500));
    const task = async () =>
      (await clusterCall(pve3, "GET", `/nodes/pve3/tasks/${encodeURIComponent(upid)}/status`, ops))
        .data as Row;
    expect((await task()).status).toBe("running");
    expect(c.model.guests.get(300)!.status).toBe("running");
    await c.powerOn("pve2");
    await waitUntil(async () => (await task()).status === "stopped", {
      what: "thawed guest stopped",
    });
    expect(c.model.guests.get(300)!.status).toBe("stopped");
  });

  it("the naive order hangs: each node stops its own guests and powers off, and the last node's Ceph guest freezes its shutdown", async () => {
    const { c, ops, pve1, pve2, pve3 } = await start({
      ceph: true,
      guests: [
        { vmid: 100, type: "qemu", node: "pve1", storage: "ceph" },
        { vmid: 200, type: "qemu", node: "pve2", storage: "ceph" },
        { vmid: 300, type: "qemu", node: "pve3", storage: "ceph" },
      ],
    });
    for (const node of [pve1, pve2]) {
      await clusterCall(node, "POST", `/nodes/${node.name}/status`, ops, { command: "shutdown" });
      await waitUntil(() => !c.model.node(node.name)!.online, { what: `${node.name} off` });
    }
    await clusterCall(pve3, "POST", "/nodes/pve3/status", ops, { command: "shutdown" });
    await new Promise((r) => setTimeout(r, 1500));
    expect(c.model.node("pve3")!.online).toBe(true);
    expect(c.model.guests.get(300)!.status).toBe("running");
    expect((await clusterCall(pve3, "GET", "/version", ops)).status).toBe(200);
  });

  it("Ceph: guests stopped first do no I/O, so the same node losses freeze nothing", async () => {
    const { c, ops, pve3 } = await start({
      ceph: true,
      guests: [{ vmid: 300, type: "qemu", node: "pve3", storage: "ceph" }],
    });
    await clusterCall(pve3, "POST", "/nodes/pve3/qemu/300/status/shutdown", ops);
    await waitUntil(() => c.model.guests.get(300)!.status === "stopped", { what: "stopped first" });
    await c.powerOff("pve1");
    await c.powerOff("pve2");
    const answer = await clusterCall(pve3, "POST", "/nodes/pve3/status", ops, {
      command: "shutdown",
    });
    expect(answer.status).toBe(200);
    await waitUntil(() => !c.model.node("pve3")!.online, { what: "last node off" });
  });

  it("migrates as Proxmox does: a task that takes time, the config moved in the shared etc/pve, memory per node, refusals before and in the task", async () => {
    const { c, ops, pve1 } = await start({
      timing: { ...FAST, migrateMs: 400 },
      nodeMemoryMiB: { pve1: 16_384, pve2: 16_384, pve3: 6144 },
      guests: [
        { vmid: 100, type: "qemu", node: "pve1", storage: "nfs" },
        { vmid: 101, type: "lxc", node: "pve1", storage: "nfs" },
        { vmid: 102, type: "qemu", node: "pve1", storage: "local" },
        { vmid: 103, type: "qemu", node: "pve1", storage: "nfs", memoryMiB: 8192 },
      ],
    });
    const status = async (node: string) =>
      (await clusterCall(pve1, "GET", `/nodes/${node}/status`, ops)).data as {
        memory: { total: number; used: number; free: number };
      };
    const GiB = 1024 ** 3;
    expect((await status("pve3")).memory).toMatchObject({ total: 6 * GiB, used: 2 * GiB });
    expect((await status("pve1")).memory.used).toBe(2 * GiB + (2 + 2 + 2 + 8) * GiB);

    // Refused before any task, as the API handler does.
    const refusals = await Promise.all([
      clusterCall(pve1, "POST", "/nodes/pve1/qemu/100/migrate", ops, { target: "pve3" }),
      clusterCall(pve1, "POST", "/nodes/pve1/lxc/101/migrate", ops, { target: "pve3" }),
      clusterCall(pve1, "POST", "/nodes/pve1/qemu/100/migrate", ops, {
        target: "pve1",
        online: "1",
      }),
      clusterCall(pve1, "POST", "/nodes/pve1/qemu/100/migrate", ops, {
        target: "pve9",
        online: "1",
      }),
    ]);
    expect(refusals.map((r) => [r.status, r.message])).toEqual([
      [500, "can't migrate running VM without --online"],
      [500, "can't migrate running container without --online or --restart"],
      [500, "target is local node."],
      [500, "no such cluster node 'pve9'"],
    ]);
    const blind = c.addToken("nomigrate", ["VM.Audit", "VM.PowerMgmt"]);
    const denied = await clusterCall(pve1, "POST", "/nodes/pve1/qemu/100/migrate", blind, {
      target: "pve3",
      online: "1",
    });
    expect([denied.status, denied.message]).toEqual([
      403,
      "Permission check failed (/vms/100, VM.Migrate)",
    ]);

    // A live migration: a task, the guest locked meanwhile, then on pve3 with its config.
    const upid = (
      await clusterCall(pve1, "POST", "/nodes/pve1/qemu/100/migrate", ops, {
        target: "pve3",
        online: "1",
      })
    ).data as string;
    expect(upid).toMatch(/^UPID:pve1:.*:qmmigrate:100:/);
    const locked = await clusterCall(pve1, "POST", "/nodes/pve1/qemu/100/status/shutdown", ops);
    expect([locked.status, locked.message]).toEqual([500, "VM is locked (migrate)"]);
    const listed = (await clusterCall(pve1, "GET", "/cluster/resources", ops, { type: "vm" }))
      .data as Row[];
    expect(listed.find((g) => g.vmid === 100)).toMatchObject({ node: "pve1", lock: "migrate" });
    // The target's memory is taken while the RAM is copied.
    expect((await status("pve3")).memory.used).toBe(4 * GiB);
    const task = async (id: string, node = "pve1") =>
      (await clusterCall(pve1, "GET", `/nodes/${node}/tasks/${encodeURIComponent(id)}/status`, ops))
        .data as Row;
    await waitUntil(async () => (await task(upid)).status === "stopped", { what: "migration" });
    expect(await task(upid)).toMatchObject({ exitstatus: "OK" });
    expect(c.model.guests.get(100)).toMatchObject({ node: "pve3", status: "running" });
    const pve = path.join(c.nodes[0]!.root, "etc/pve/nodes");
    expect(fs.existsSync(path.join(pve, "pve3/qemu-server/100.conf"))).toBe(true);
    expect(fs.existsSync(path.join(pve, "pve1/qemu-server/100.conf"))).toBe(false);

    // A container restarts on the target.
    const ct = (
      await clusterCall(pve1, "POST", "/nodes/pve1/lxc/101/migrate", ops, {
        target: "pve2",
        restart: "1",
      })
    ).data as string;
    await waitUntil(async () => (await task(ct)).status === "stopped", { what: "ct migration" });
    expect(c.model.guests.get(101)).toMatchObject({ node: "pve2", status: "running" });

    // In the task: a running VM with a local disk, and one the target has no memory for.
    const local = (
      await clusterCall(pve1, "POST", "/nodes/pve1/qemu/102/migrate", ops, {
        target: "pve2",
        online: "1",
      })
    ).data as string;
    const big = (
      await clusterCall(pve1, "POST", "/nodes/pve1/qemu/103/migrate", ops, {
        target: "pve3",
        online: "1",
      })
    ).data as string;
    await waitUntil(
      async () =>
        (await task(local)).status === "stopped" && (await task(big)).status === "stopped",
      { what: "refused migrations" },
    );
    expect((await task(local)).exitstatus).toMatch(
      /^migration aborted .*: can't live migrate attached local disks without with-local-disks option$/,
    );
    expect((await task(big)).exitstatus).toMatch(
      /failed to start the guest on pve3: Cannot allocate memory/,
    );
    expect(c.model.guests.get(102)!.node).toBe("pve1");
    expect(c.model.guests.get(103)!.node).toBe("pve1");

    // No quorum, no migration.
    await c.powerOff("pve2");
    await c.powerOff("pve3");
    const lost = await clusterCall(pve1, "POST", "/nodes/pve1/qemu/103/migrate", ops, {
      target: "pve3",
      online: "1",
    });
    expect([lost.status, lost.message]).toEqual([500, "cluster not ready - no quorum?"]);
  });
});
