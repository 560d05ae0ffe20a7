import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import {
  clusterNodePower,
  startLabPowerControllers,
  type LabPowerControllers,
} from "@/lab/power-controllers";
import { startLabCluster, type LabCluster } from "@/lab/pve/cluster/start";
import { getDb } from "@/lib/db/client";
import { auditLog, events, powerControllers } from "@/lib/db/schema";
import { runSelfTest } from "@/lib/power/self-test/run-self-test";
import type { SelfTestCheck } from "@/lib/power/self-test/verdict";
import { createTestUser, type TestUser } from "@/test/auth";
import { seedActiveLabHost } from "@/test/fixtures/active-lab-host";
import { registerProcessTestDatabase, routeParams } from "@/test/process-database";

import { POST as POWER_ON } from "./power-on/route";
import { DELETE, GET, PUT } from "./route";

/*
 * PUT/GET/DELETE /api/hosts/{id}/power-controller and the self-test's controller checks,
 * against a lab cluster's nodes and their lab BMCs (Redfish over TLS, Debian's ipmi_sim).
 */

registerProcessTestDatabase();
let cluster: LabCluster;
let bmc: LabPowerControllers;
let admin: TestUser;
let operator: TestUser;
let viewer: TestUser;
const hostIds = new Map<string, string>();
/** Every answer's text, to prove no password ever left the console. */
const answered: string[] = [];

beforeAll(async () => {
  const db = getDb();
  [admin, operator, viewer] = await Promise.all([
    createTestUser(db, "admin"),
    createTestUser(db, "operator"),
    createTestUser(db, "viewer"),
  ]);
  cluster = await startLabCluster({ nodes: 2, apiAuthFailureDelayMs: 0 });
  bmc = await startLabPowerControllers({
    nodes: cluster.nodes.map((n) => clusterNodePower(cluster, n.name)),
    password: "BmcSecret-123",
  });
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
}, 120_000);

afterAll(async () => {
  await bmc?.stop();
  await cluster?.stop();
  for (const text of answered) {
    expect(text).not.toContain("BmcSecret-123");
    expect(text).not.toContain("wrong-pass");
    expect(text).not.toContain("sealed");
  }
});

async function call(
  handler: typeof PUT,
  user: TestUser,
  hostId: string,
  method: string,
  body?: unknown,
  query = "",
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await handler(
    new Request(`http://test/api/hosts/${hostId}/power-controller${query}`, {
      method,
      headers: user.authHeaders({ "content-type": "application/json" }),
      ...(body === undefined
        ? {}
        : { body: typeof body === "string" ? body : JSON.stringify(body) }),
    }),
    routeParams({ hostId }),
  );
  const text = await response.text();
  answered.push(text);
  return {
    status: response.status,
    body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
  };
}

const redfishBody = (name: string, patch: Record<string, unknown> = {}) => ({
  kind: "redfish",
  address: bmc.node(name).redfish.address,
  port: bmc.node(name).redfish.port,
  username: bmc.username,
  password: bmc.password,
  systemId: bmc.node(name).redfish.systemId,
  ...patch,
});
const ipmiBody = (name: string, patch: Record<string, unknown> = {}) => ({
  kind: "ipmi",
  address: bmc.node(name).ipmi.address,
  port: bmc.node(name).ipmi.port,
  username: bmc.username,
  password: bmc.password,
  ...patch,
});

async function controllerChecks(hostId: string): Promise<Record<string, SelfTestCheck>> {
  const result = await runSelfTest(getDb(), { occasion: "button", timeoutMs: 3000 });
  return Object.fromEntries(
    result.checks
      .filter((c) => c.key.startsWith("power-controller-") && c.key.endsWith(hostId))
      .map((c) => [c.key.split(":")[0]!.replace("power-controller-", ""), c]),
  );
}

describe("PUT /api/hosts/{id}/power-controller", () => {
  it("refuses hostile input to every field with field errors, never a 500", async () => {
    const hostId = hostIds.get("pve1")!;
    const cases: Array<[unknown, string]> = [
      [{ kind: "telnet" }, "kind"],
      [{ kind: ["redfish"] }, "kind"],
      [redfishBody("pve1", { address: "-oProxyCommand=x" }), "address"],
      [redfishBody("pve1", { address: "a b;rm -rf /" }), "address"],
      [redfishBody("pve1", { address: "x".repeat(300) }), "address"],
      [redfishBody("pve1", { port: 0 }), "port"],
      [redfishBody("pve1", { port: 70000 }), "port"],
      [redfishBody("pve1", { port: "1e3x" }), "port"],
      [redfishBody("pve1", { username: "-f/etc/shadow" }), "username"],
      [redfishBody("pve1", { username: "a:b" }), "username"],
      [redfishBody("pve1", { username: { $ne: 1 } }), "username"],
      [redfishBody("pve1", { password: "line\nbreak" }), "password"],
      [redfishBody("pve1", { password: "x".repeat(129) }), "password"],
      [redfishBody("pve1", { password: 42 }), "password"],
      [redfishBody("pve1", { systemId: "../../Managers/1" }), "systemId"],
      [redfishBody("pve1", { systemId: "1?x=1" }), "systemId"],
      [redfishBody("pve1", { auth: "digest" }), "auth"],
      [redfishBody("pve1", { auth: ["session"] }), "auth"],
      [redfishBody("pve1", { auth: "session\r\nX-Auth-Token: x" }), "auth"],
      [ipmiBody("pve1", { username: "x".repeat(17) }), "username"],
      [ipmiBody("pve1", { password: "x".repeat(21) }), "password"],
      [ipmiBody("pve1", { address: "--help" }), "address"],
      [{ kind: "wol", mac: "zz:zz:zz:zz:zz:zz", broadcastAddress: "10.0.0.255" }, "mac"],
      [
        { kind: "wol", mac: "52:54:00:00:00:01", broadcastAddress: "10.0.0.256" },
        "broadcastAddress",
      ],
      [
        { kind: "wol", mac: "52:54:00:00:00:01", broadcastAddress: "host.example" },
        "broadcastAddress",
      ],
      [{ kind: "wol", mac: "52:54:00:00:00:01", broadcastAddress: "10.0.0.255", port: -1 }, "port"],
    ];
    for (const [body, field] of cases) {
      const { status, body: answer } = await call(PUT, admin, hostId, "PUT", body);
      expect(status, JSON.stringify(body)).toBe(400);
      expect(Object.keys((answer.fieldErrors ?? {}) as object), JSON.stringify(body)).toContain(
        field,
      );
    }
    for (const raw of ["not json", "[]", "null", '"redfish"']) {
      const { status } = await call(PUT, admin, hostId, "PUT", raw);
      expect(status, raw).toBe(400);
    }
    expect((await call(PUT, admin, "not-a-uuid", "PUT", redfishBody("pve1"))).status).toBe(400);
    // A first controller without a password: the password field is named.
    const { status, body } = await call(
      PUT,
      admin,
      hostId,
      "PUT",
      redfishBody("pve1", { password: "" }),
    );
    expect(status).toBe(400);
    expect(Object.keys(body.fieldErrors as object)).toContain("password");
    expect(await getDb().select().from(powerControllers)).toEqual([]);
  });

  it("is for admins only", async () => {
    const { status } = await call(PUT, operator, hostIds.get("pve1")!, "PUT", redfishBody("pve1"));
    expect(status).toBe(403);
  });

  it("stores a Redfish controller sealed, pins its certificate at first contact and reads On", async () => {
    const hostId = hostIds.get("pve1")!;
    const put = await call(PUT, admin, hostId, "PUT", redfishBody("pve1"));
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ kind: "redfish", hasPassword: true, certSha256: null });
    expect(put.body).not.toHaveProperty("password");
    const [row] = await getDb()
      .select()
      .from(powerControllers)
      .where(eq(powerControllers.hostId, hostId));
    expect(row!.sealedSecret).toMatch(/^v1\./);
    expect(row!.sealedSecret).not.toContain("BmcSecret");

    const read = await call(GET, operator, hostId, "GET", undefined, "?read=true");
    expect(read.status).toBe(200);
    expect(read.body.state).toMatchObject({ state: "on" });
    expect(read.body.controller).toMatchObject({ certSha256: bmc.node("pve1").redfish.certSha256 });

    const audit = await getDb()
      .select()
      .from(auditLog)
      .where(eq(auditLog.action, "host.power_controller_set"));
    expect(audit.length).toBeGreaterThan(0);
    expect(JSON.stringify(audit)).not.toContain("BmcSecret");
    const hostEvents = await getDb().select().from(events).where(eq(events.hostId, hostId));
    expect(JSON.stringify(hostEvents)).not.toContain("BmcSecret");

    const checks = await controllerChecks(hostId);
    expect(Object.fromEntries(Object.entries(checks).map(([k, c]) => [k, c.verdict]))).toEqual({
      reach: "ok",
      login: "ok",
      state: "ok",
    });
    expect(checks.state!.reason).toContain("PowerState On");
  });

  it("a Redfish session instead of basic auth: stored, checked by the self-test, every session deleted", async () => {
    const hostId = hostIds.get("pve1")!;
    const lab = bmc.node("pve1").redfish;
    const opened = lab.sessionLog.length;
    const put = await call(PUT, admin, hostId, "PUT", redfishBody("pve1", { auth: "session" }));
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ kind: "redfish", redfishAuth: "session" });
    const checks = await controllerChecks(hostId);
    expect(Object.fromEntries(Object.entries(checks).map(([k, c]) => [k, c.verdict]))).toEqual({
      reach: "ok",
      login: "ok",
      state: "ok",
    });
    expect(lab.sessionLog.length).toBeGreaterThan(opened);
    expect(lab.openSessions()).toEqual([]);
    const wrong = await call(
      PUT,
      admin,
      hostId,
      "PUT",
      redfishBody("pve1", { auth: "session", password: "wrong-pass" }),
    );
    expect(wrong.status).toBe(200);
    expect((await controllerChecks(hostId)).login!.verdict).toBe("failed");
    // Back to basic auth with the right password for the tests that follow.
    expect((await call(PUT, admin, hostId, "PUT", redfishBody("pve1"))).status).toBe(200);
    expect(lab.openSessions()).toEqual([]);
  });

  it("keeps the stored password when none is given; a wrong one fails the self-test's login check", async () => {
    const hostId = hostIds.get("pve1")!;
    const keep = await call(
      PUT,
      admin,
      hostId,
      "PUT",
      redfishBody("pve1", { password: undefined }),
    );
    expect(keep.status).toBe(200);
    // Same address and port: the pin stays.
    expect(keep.body.certSha256).toBe(bmc.node("pve1").redfish.certSha256);
    expect((await controllerChecks(hostId)).login!.verdict).toBe("ok");

    await call(PUT, admin, hostId, "PUT", redfishBody("pve1", { password: "wrong-pass" }));
    const checks = await controllerChecks(hostId);
    expect(checks.reach!.verdict).toBe("ok");
    expect(checks.login!.verdict).toBe("failed");
    expect(checks.login!.reason).toContain("check the user name and password");
    expect(checks.login!.next).toContain("Correct the user or password");
    expect(checks.state!.verdict).toBe("could-not-check");
  });

  it("IPMI through ipmitool: a wrong password is named; unreachable is 'could not ask', never Off", async () => {
    const hostId = hostIds.get("pve2")!;
    expect((await call(PUT, admin, hostId, "PUT", ipmiBody("pve2"))).status).toBe(200);
    let checks = await controllerChecks(hostId);
    expect(checks.state!.verdict).toBe("ok");
    expect(checks.state!.reason).toContain("Chassis Power is on");

    await call(PUT, admin, hostId, "PUT", ipmiBody("pve2", { password: "wrong-pass" }));
    checks = await controllerChecks(hostId);
    expect(checks.login!.verdict).toBe("failed");
    expect(checks.login!.reason).toContain("refused the password");

    await call(PUT, admin, hostId, "PUT", ipmiBody("pve2"));
    await bmc.node("pve2").setUnreachable(true);
    try {
      const read = await call(GET, admin, hostId, "GET", undefined, "?read=1");
      expect(read.body.state).toMatchObject({ state: "unknown", problem: "unreachable" });
      checks = await controllerChecks(hostId);
      expect(checks.reach!.verdict).toBe("failed");
      expect(checks.reach!.next).toContain("address and port");
      expect(checks.state!.verdict).toBe("could-not-check");
    } finally {
      await bmc.node("pve2").setUnreachable(false);
    }
  });

  it("a controller reading Off while the host's API answers is another machine's", async () => {
    const hostId = hostIds.get("pve1")!;
    // pve1's host record, pve2's BMC; pve2 loses power, pve1 runs on.
    await call(PUT, admin, hostId, "PUT", redfishBody("pve2"));
    await cluster.powerOff("pve2");
    try {
      const checks = await controllerChecks(hostId);
      expect(checks.state!.verdict).toBe("failed");
      expect(checks.state!.reason).toContain("belongs to another machine");
    } finally {
      await cluster.powerOn("pve2");
    }
  });

  it("a Wake-on-LAN controller is stored and warned about (it cannot be tested without waking)", async () => {
    const hostId = hostIds.get("pve1")!;
    const wol = bmc.node("pve1").wol;
    const put = await call(PUT, admin, hostId, "PUT", {
      kind: "wol",
      mac: wol.mac.toUpperCase().replace(/:/g, "-"),
      broadcastAddress: wol.broadcastAddress,
      port: wol.port,
    });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({
      kind: "wol",
      mac: wol.mac,
      hasPassword: false,
      address: null,
    });
    const checks = await controllerChecks(hostId);
    expect(checks.state!.verdict).toBe("warning");
    expect(bmc.node("pve1").chassis.powerOnRequests).not.toContain("wake-on-lan");
  });

  it("DELETE removes it (admins only); a host without one answers null", async () => {
    const hostId = hostIds.get("pve1")!;
    expect((await call(DELETE, operator, hostId, "DELETE")).status).toBe(403);
    expect((await call(DELETE, admin, hostId, "DELETE")).body).toEqual({ hostId, deleted: "wol" });
    expect((await call(DELETE, admin, hostId, "DELETE")).status).toBe(404);
    const read = await call(GET, admin, hostId, "GET", undefined, "?read=true");
    expect(read.body).toEqual({ hostId, controller: null, state: null });
    expect(await controllerChecks(hostId)).toEqual({});
  });
});

describe("POST /api/hosts/{id}/power-controller/power-on", () => {
  const powerOn = (user: TestUser, hostId: string) =>
    call(POWER_ON as typeof PUT, user, hostId, "POST");
  const powerOnAudits = async (hostId: string) =>
    (
      await getDb()
        .select()
        .from(auditLog)
        .where(eq(auditLog.target, `host:${hostId}`))
    ).filter((row) => row.action === "host.power_on");

  it("without a controller: 409 that says to set one; viewers may not", async () => {
    const hostId = hostIds.get("pve2")!;
    await call(DELETE, admin, hostId, "DELETE");
    expect((await powerOn(viewer, hostId)).status).toBe(403);
    const answer = await powerOn(operator, hostId);
    expect(answer.status).toBe(409);
    expect(answer.body.error).toMatch(/no power controller: set one/);
  });

  it("Redfish: a node that is off is powered on, read back On, event and audit say so", async () => {
    const hostId = hostIds.get("pve2")!;
    await call(PUT, admin, hostId, "PUT", redfishBody("pve2"));
    await cluster.powerOff("pve2");
    const chassis = bmc.node("pve2").chassis;
    const before = chassis.powerOnRequests.length;
    try {
      const answer = await powerOn(operator, hostId);
      expect(answer.status).toBe(200);
      expect(answer.body).toMatchObject({ hostId, result: "sent", after: { state: "on" } });
      expect(answer.body.message).toMatch(/took the request and reads On/);
      expect(chassis.powerOnRequests.length - before).toBe(1);
      await expect.poll(() => clusterNodePower(cluster, "pve2").isOn()).toBe(true);
      // The earlier refusal (no controller) is the failure before it.
      expect((await powerOnAudits(hostId)).map((a) => [a.outcome, a.detail])).toEqual([
        ["failure", { reason: expect.stringMatching(/no power controller/) }],
        ["success", { result: "sent", after: "on" }],
      ]);
      const recorded = await getDb().select().from(events).where(eq(events.hostId, hostId));
      expect(recorded.some((e) => e.kind === "host.power_on")).toBe(true);
    } finally {
      if (!clusterNodePower(cluster, "pve2").isOn()) await cluster.powerOn("pve2");
    }
  });

  it("a host that already reads On: nothing is sent", async () => {
    const hostId = hostIds.get("pve2")!;
    const chassis = bmc.node("pve2").chassis;
    const before = chassis.powerOnRequests.length;
    const answer = await powerOn(operator, hostId);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ result: "already-on", after: { state: "on" } });
    expect(answer.body.message).toMatch(/nothing was sent/);
    expect(chassis.powerOnRequests.length).toBe(before);
  });

  it("IPMI, a machine that never boots: the BMC reads On, and the answer says the host's API is what tells it started", async () => {
    const hostId = hostIds.get("pve2")!;
    await call(PUT, admin, hostId, "PUT", ipmiBody("pve2"));
    await cluster.powerOff("pve2");
    const chassis = bmc.node("pve2").chassis;
    chassis.faults.neverBoots = true;
    try {
      const answer = await powerOn(operator, hostId);
      expect(answer.status).toBe(200);
      expect(answer.body).toMatchObject({ result: "sent", after: { state: "on" } });
      expect(answer.body.message).toMatch(/its Proxmox API answers once it has booted/);
      expect(chassis.powerOnRequests.at(-1)).toMatch(/ipmi/i);
      expect(clusterNodePower(cluster, "pve2").isOn()).toBe(false);
    } finally {
      chassis.faults.neverBoots = false;
      await chassis.forceOff();
      await call(PUT, admin, hostId, "PUT", redfishBody("pve2"));
      await cluster.powerOn("pve2");
    }
  });

  it("a controller that cannot be reached: 503 naming it, audited as a failure, the node stays off", async () => {
    const hostId = hostIds.get("pve2")!;
    await cluster.powerOff("pve2");
    const chassis = bmc.node("pve2").chassis;
    chassis.faults.unreachable = true;
    try {
      const answer = await powerOn(operator, hostId);
      expect(answer.status).toBe(503);
      expect(answer.body.error).toMatch(/was not powered on/);
      expect(clusterNodePower(cluster, "pve2").isOn()).toBe(false);
      const audits = await powerOnAudits(hostId);
      expect(audits.some((a) => a.outcome === "failure")).toBe(true);
    } finally {
      chassis.faults.unreachable = false;
      await cluster.powerOn("pve2");
    }
  });
});
