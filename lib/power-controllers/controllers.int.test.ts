import { afterAll, beforeAll, describe, expect, it } from "vitest";

import {
  clusterNodePower,
  registerPowerControllerSwitches,
  startLabPowerControllers,
  type LabPowerControllers,
} from "@/lab/power-controllers";
import { SwitchRegistry } from "@/lab/control/switches";
import { startLabCluster, type LabCluster } from "@/lab/pve/cluster/start";
import { isProcessAlive, waitUntil } from "@/lab/processes";
import { probeApi } from "@/lib/proxmox/pinned-https";

import { ipmiController } from "./ipmi";
import { redfishController } from "./redfish";
import { wolController } from "./wol";

/**
 * The three controllers through the real parts: the console's Redfish client against the lab's
 * TLS Redfish service, Debian's ipmitool against Debian's ipmi_sim, and a magic packet to the
 * lab's Wake-on-LAN listener — each switching a lab cluster node's real power.
 */

let cluster: LabCluster;
let bmc: LabPowerControllers;
let registry: SwitchRegistry;

beforeAll(async () => {
  cluster = await startLabCluster({ nodes: 2, apiAuthFailureDelayMs: 0 });
  bmc = await startLabPowerControllers({
    nodes: cluster.nodes.map((n) => clusterNodePower(cluster, n.name)),
  });
  registry = registerPowerControllerSwitches(new SwitchRegistry(), bmc);
}, 120_000);

afterAll(async () => {
  const pids = bmc?.nodes.map((n) => n.ipmi.pid()).filter((pid) => pid !== null) ?? [];
  await bmc?.stop();
  await cluster?.stop();
  // Every ipmi_sim the lab started is gone.
  for (const pid of pids) expect(isProcessAlive(pid!)).toBe(false);
});

const online = (name: string) => cluster.model.node(name)!.online;
const apiAnswers = async (name: string) => {
  const node = cluster.nodes.find((n) => n.name === name)!;
  return (
    await probeApi({ baseUrl: node.api.url, certSha256: node.api.certSha256, timeoutMs: 2000 })
  ).answers;
};

function redfish(
  name: string,
  override: { password?: string; certSha256?: string | null; auth?: "basic" | "session" } = {},
) {
  const lab = bmc.node(name).redfish;
  return redfishController({
    auth: override.auth ?? "basic",
    address: lab.address,
    port: lab.port,
    username: bmc.username,
    password: override.password ?? bmc.password,
    systemId: lab.systemId,
    certSha256: override.certSha256 === undefined ? lab.certSha256 : override.certSha256,
    timeoutMs: 5000,
  });
}

function ipmi(name: string, override: { username?: string; password?: string } = {}) {
  const lab = bmc.node(name).ipmi;
  return ipmiController({
    address: lab.address,
    port: lab.port,
    username: override.username ?? bmc.username,
    password: override.password ?? bmc.password,
    answerSeconds: 1,
  });
}

describe("Redfish against the lab's BMC", () => {
  it("reads On for a running node, Off once it lost power, and powers it on", async () => {
    expect(await redfish("pve1").readPowerState()).toMatchObject({ state: "on" });
    // On already: nothing is sent (some BMCs refuse On for a machine that is on).
    expect(await redfish("pve1").powerOn()).toMatchObject({
      sent: true,
      detail: expect.stringContaining("already") as unknown,
    });
    expect(bmc.node("pve1").chassis.powerOnRequests).toEqual([]);
    await cluster.powerOff("pve1");
    expect(await redfish("pve1").readPowerState()).toMatchObject({ state: "off" });
    expect(await redfish("pve1").powerOn()).toMatchObject({ sent: true });
    await waitUntil(() => online("pve1"), { timeoutMs: 30_000, what: "pve1 powered on" });
    await waitUntil(() => apiAnswers("pve1"), { timeoutMs: 30_000, what: "pve1's API" });
    expect(await redfish("pve1").readPowerState()).toMatchObject({ state: "on" });
    expect(bmc.node("pve1").chassis.powerOnRequests).toContain("redfish On");
  });

  it("pins the certificate of the first contact, before sending the password", async () => {
    const pinned: string[] = [];
    const lab = bmc.node("pve1").redfish;
    const first = redfishController({
      address: lab.address,
      port: lab.port,
      username: bmc.username,
      password: bmc.password,
      systemId: lab.systemId,
      certSha256: null,
      onFirstContact: async (sha) => {
        pinned.push(sha);
      },
    });
    expect(await first.readPowerState()).toMatchObject({ state: "on" });
    expect(pinned).toEqual([lab.certSha256]);
  });

  it("names wrong credentials, another certificate and no answer — never Off", async () => {
    const wrong = await redfish("pve1", { password: "not-it" }).readPowerState();
    expect(wrong).toMatchObject({ state: "unknown", problem: "credentials" });
    expect(JSON.stringify(wrong)).not.toContain("not-it");
    const other = await redfish("pve1", { certSha256: "AB".repeat(32) }).readPowerState();
    expect(other).toMatchObject({ state: "unknown", problem: "certificate" });
    const wrongSystem = await redfishController({
      ...bmc.node("pve1").redfish,
      username: bmc.username,
      password: bmc.password,
      systemId: "nope",
    }).readPowerState();
    expect(wrongSystem).toMatchObject({ state: "unknown", problem: "answer" });

    expect(await registry.apply({ "bmc.pve1.unreachable": true })).toEqual({ ok: true });
    try {
      const cut = await redfish("pve1").readPowerState();
      expect(cut).toMatchObject({ state: "unknown", problem: "unreachable" });
      expect(await redfish("pve1").powerOn()).toMatchObject({
        sent: false,
        problem: "unreachable",
      });
    } finally {
      await registry.apply({ "bmc.pve1.unreachable": false });
    }
    expect(await redfish("pve1").readPowerState()).toMatchObject({ state: "on" });
  });

  it("a node that never boots reads On with its API silent; a slow one comes up later", async () => {
    await cluster.powerOff("pve2");
    await registry.apply({ "bmc.pve2.neverBoots": true });
    expect(await redfish("pve2").powerOn()).toMatchObject({ sent: true });
    expect(await redfish("pve2").readPowerState()).toMatchObject({ state: "on" });
    expect(online("pve2")).toBe(false);
    expect(await apiAnswers("pve2")).toBe(false);
    // Off again (ForceOff clears the hang), then a slow boot.
    await bmc.node("pve2").chassis.forceOff();
    await registry.apply({ "bmc.pve2.neverBoots": false, "bmc.pve2.bootMs": 4000 });
    expect(await redfish("pve2").powerOn()).toMatchObject({ sent: true });
    expect(await redfish("pve2").readPowerState()).toMatchObject({ state: "on" });
    expect(online("pve2")).toBe(false);
    await waitUntil(() => online("pve2"), { timeoutMs: 30_000, what: "pve2 booted" });
    await registry.apply({ "bmc.pve2.bootMs": null });
  });
});

describe("Redfish sessions (SessionService) against the lab's BMC", () => {
  it("reads and powers on through a session each time, and deletes every session it opened", async () => {
    const lab = bmc.node("pve1").redfish;
    const opened = lab.sessionLog.length;
    expect(await redfish("pve1", { auth: "session" }).readPowerState()).toMatchObject({
      state: "on",
    });
    await cluster.powerOff("pve1");
    expect(await redfish("pve1", { auth: "session" }).readPowerState()).toMatchObject({
      state: "off",
    });
    expect(await redfish("pve1", { auth: "session" }).powerOn()).toMatchObject({ sent: true });
    await waitUntil(() => online("pve1"), { timeoutMs: 30_000, what: "pve1 powered on" });
    // Three uses, three sessions: each opened, each deleted; none left open.
    expect(lab.sessionLog.slice(opened)).toEqual([
      expect.stringMatching(/^opened /),
      expect.stringMatching(/^deleted /),
      expect.stringMatching(/^opened /),
      expect.stringMatching(/^deleted /),
      expect.stringMatching(/^opened /),
      expect.stringMatching(/^deleted /),
    ]);
    expect(lab.openSessions()).toEqual([]);
  });

  it("a wrong password is refused at the session (401): credentials, no session, the password nowhere", async () => {
    const lab = bmc.node("pve1").redfish;
    const opened = lab.sessionLog.length;
    const wrong = await redfish("pve1", { auth: "session", password: "not-it" }).readPowerState();
    expect(wrong).toMatchObject({ state: "unknown", problem: "credentials" });
    expect(JSON.stringify(wrong)).not.toContain("not-it");
    const refused = await redfish("pve1", { auth: "session", password: "not-it" }).powerOn();
    expect(refused).toMatchObject({ sent: false, problem: "credentials" });
    expect(lab.sessionLog.slice(opened)).toEqual([]);
  });

  it("the BMC checks the token: a deleted session's token is refused", async () => {
    const lab = bmc.node("pve1").redfish;
    // Open a session by hand, as the console does, then use its token after deleting it.
    const call = async (
      method: string,
      path: string,
      headers: Record<string, string>,
      body?: unknown,
    ) => {
      const { request } = await import("node:https");
      return new Promise<{ status: number; token?: string; location?: string }>(
        (resolve, reject) => {
          const req = request(
            {
              host: lab.address,
              port: lab.port,
              method,
              path,
              rejectUnauthorized: false,
              headers: { "Content-Type": "application/json", ...headers },
            },
            (res) => {
              res.resume();
              res.on("end", () =>
                resolve({
                  status: res.statusCode ?? 0,
                  token: res.headers["x-auth-token"] as string | undefined,
                  location: res.headers.location,
                }),
              );
            },
          );
          req.on("error", reject);
          req.end(body === undefined ? undefined : JSON.stringify(body));
        },
      );
    };
    const session = await call(
      "POST",
      "/redfish/v1/SessionService/Sessions",
      {},
      {
        UserName: bmc.username,
        Password: bmc.password,
      },
    );
    expect(session.status).toBe(201);
    const auth = { "X-Auth-Token": session.token! };
    expect((await call("GET", `/redfish/v1/Systems/${lab.systemId}`, auth)).status).toBe(200);
    expect(
      (await call("GET", `/redfish/v1/Systems/${lab.systemId}`, { "X-Auth-Token": "forged" }))
        .status,
    ).toBe(401);
    expect((await call("DELETE", session.location!, auth)).status).toBe(204);
    expect((await call("GET", `/redfish/v1/Systems/${lab.systemId}`, auth)).status).toBe(401);
  });
});

describe("IPMI: Debian's ipmitool against Debian's ipmi_sim", () => {
  it("reads the node's power and powers a powered-off node on", async () => {
    expect(await ipmi("pve2").readPowerState()).toMatchObject({ state: "on" });
    await cluster.powerOff("pve2");
    expect(await ipmi("pve2").readPowerState()).toMatchObject({ state: "off" });
    expect(await ipmi("pve2").powerOn()).toMatchObject({ sent: true });
    await waitUntil(() => online("pve2"), { timeoutMs: 30_000, what: "pve2 powered on" });
    await waitUntil(() => apiAnswers("pve2"), { timeoutMs: 30_000, what: "pve2's API" });
    expect(await ipmi("pve2").readPowerState()).toMatchObject({ state: "on" });
    expect(bmc.node("pve2").chassis.powerOnRequests).toContain("ipmi chassis power on");
  });

  it("tells a wrong password from an unknown user from no answer — never Off", async () => {
    const password = await ipmi("pve2", { password: "wrong-one" }).readPowerState();
    expect(password).toMatchObject({ state: "unknown", problem: "credentials" });
    expect(password.state === "unknown" && password.reason).toMatch(/password/);
    expect(JSON.stringify(password)).not.toContain("wrong-one");
    const user = await ipmi("pve2", { username: "nobody" }).readPowerState();
    expect(user).toMatchObject({ state: "unknown", problem: "credentials" });
    expect(user.state === "unknown" && user.reason).toMatch(/does not know the user nobody/);

    const pid = bmc.node("pve2").ipmi.pid()!;
    await registry.apply({ "bmc.pve2.unreachable": true });
    try {
      expect(isProcessAlive(pid)).toBe(false);
      expect(await ipmi("pve2").readPowerState()).toMatchObject({
        state: "unknown",
        problem: "unreachable",
      });
      expect(await ipmi("pve2").powerOn()).toMatchObject({ sent: false, problem: "unreachable" });
    } finally {
      await registry.apply({ "bmc.pve2.unreachable": false });
    }
    expect(await ipmi("pve2").readPowerState()).toMatchObject({ state: "on" });
  });
});

describe("Wake-on-LAN to the lab's listener", () => {
  it("wakes a powered-off node; it cannot read a power state", async () => {
    const lab = bmc.node("pve1").wol;
    const wol = wolController(lab);
    expect(await wol.readPowerState()).toMatchObject({ state: "unknown", problem: "unsupported" });
    await cluster.powerOff("pve1");
    expect(await wol.powerOn()).toMatchObject({ sent: true });
    await waitUntil(() => online("pve1"), { timeoutMs: 30_000, what: "pve1 woken" });
    expect(bmc.node("pve1").chassis.powerOnRequests).toContain("wake-on-lan");
  });

  it("a packet to an unreachable node is lost: sent, and the node stays off", async () => {
    await cluster.powerOff("pve2");
    const lost = bmc.node("pve2");
    const before = lost.chassis.powerOnRequests.length;
    await registry.apply({ "bmc.pve2.unreachable": true });
    try {
      // Sending cannot tell: the packet went out.
      expect(await wolController(lost.wol).powerOn()).toMatchObject({ sent: true });
      // The listener reads packets in order: once a later one for pve1 arrived, pve2's was read.
      const pve1 = bmc.node("pve1").chassis.powerOnRequests;
      const seen = pve1.length;
      expect(await wolController(bmc.node("pve1").wol).powerOn()).toMatchObject({ sent: true });
      await waitUntil(() => pve1.length > seen, { timeoutMs: 10_000, what: "pve1's packet" });
      expect(lost.chassis.powerOnRequests.length).toBe(before);
      expect(online("pve2")).toBe(false);
    } finally {
      await registry.apply({ "bmc.pve2.unreachable": false });
    }
    // Reachable again: ipmi_sim is back and reads the node off.
    expect(await ipmi("pve2").readPowerState()).toMatchObject({ state: "off" });
  });
});
