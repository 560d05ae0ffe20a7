import { randomUUID } from "node:crypto";
import { asc, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { startLabPbs, type LabPbs } from "@/lab/pbs/server";
import {
  labPbsPower,
  startLabPowerControllers,
  type LabPowerControllers,
} from "@/lab/power-controllers";
import { getDb } from "@/lib/db/client";
import { auditLog, powerControllers } from "@/lib/db/schema";
import { createTestUser, type TestUser } from "@/test/auth";
import { addUps, protectPbs } from "@/test/fixtures/power";
import { registerProcessTestDatabase, routeParams } from "@/test/process-database";

import { POST as POWER_ON } from "./power-on/route";
import { DELETE, GET, PUT } from "./route";

/*
 * PUT/GET/DELETE /api/power/targets/{id}/power-controller and its power-on, for a lab Proxmox
 * Backup Server whose lab BMC (Redfish over TLS, Debian's ipmi_sim) switches its real lab power.
 */

registerProcessTestDatabase();
let pbs: LabPbs;
let bmc: LabPowerControllers;
let admin: TestUser;
let operator: TestUser;
let viewer: TestUser;
let targetId: string;
/** Every answer's text, to prove no password ever left the console. */
const answered: string[] = [];

beforeAll(async () => {
  const db = getDb();
  [admin, operator, viewer] = await Promise.all([
    createTestUser(db, "admin"),
    createTestUser(db, "operator"),
    createTestUser(db, "viewer"),
  ]);
  pbs = await startLabPbs({ name: "pbs-api" });
  bmc = await startLabPowerControllers({ nodes: [labPbsPower(pbs)], password: "BmcSecret-123" });
  targetId = await protectPbs(db, pbs, { feeds: [await addUps(db, "ups-pbs-api")] });
}, 120_000);

afterAll(async () => {
  await bmc?.stop();
  await pbs?.stop();
  for (const text of answered) {
    expect(text).not.toContain("BmcSecret-123");
    expect(text).not.toContain("sealed");
  }
});

async function call(
  handler: typeof PUT,
  user: TestUser,
  id: string,
  method: string,
  body?: unknown,
  query = "",
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await handler(
    new Request(`http://test/api/power/targets/${id}/power-controller${query}`, {
      method,
      headers: user.authHeaders({ "content-type": "application/json" }),
      ...(body === undefined
        ? {}
        : { body: typeof body === "string" ? body : JSON.stringify(body) }),
    }),
    routeParams({ targetId: id }),
  );
  const text = await response.text();
  answered.push(text);
  return {
    status: response.status,
    body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
  };
}

const redfishBody = (patch: Record<string, unknown> = {}) => ({
  kind: "redfish",
  address: bmc.node(pbs.name).redfish.address,
  port: bmc.node(pbs.name).redfish.port,
  username: bmc.username,
  password: bmc.password,
  systemId: bmc.node(pbs.name).redfish.systemId,
  ...patch,
});

const fieldsOf = (body: Record<string, unknown>) => Object.keys(body.fieldErrors as object);

describe("a backup server's power controller over the API", () => {
  it("hostile or impossible input is a field error, never a 500; Wake-on-LAN through a cluster member is refused for a PBS", async () => {
    const cases: Array<[unknown, string]> = [
      [{ kind: "pve-wol" }, "kind"],
      [redfishBody({ address: "-oProxyCommand=sh" }), "address"],
      [redfishBody({ port: 70_000 }), "port"],
      [redfishBody({ username: "-R" }), "username"],
      [redfishBody({ password: "a\nb" }), "password"],
      [redfishBody({ systemId: "../Managers" }), "systemId"],
      [{ kind: "wol", mac: "zz:zz", broadcastAddress: "10.0.0.255" }, "mac"],
      [{ kind: "telnet" }, "kind"],
    ];
    for (const [body, field] of cases) {
      const answer = await call(PUT, admin, targetId, "PUT", body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(fieldsOf(answer.body), JSON.stringify(body)).toContain(field);
    }
    expect((await call(PUT, admin, targetId, "PUT", "{not json")).status).toBe(400);
    expect((await call(PUT, admin, "not-a-uuid", "PUT", redfishBody())).status).toBe(400);
    expect((await call(PUT, admin, randomUUID(), "PUT", redfishBody())).status).toBe(404);
    // A first controller without a password: the password field is named.
    const nopass = await call(PUT, admin, targetId, "PUT", redfishBody({ password: "" }));
    expect(nopass.status).toBe(400);
    expect(fieldsOf(nopass.body)).toContain("password");
    expect(await getDb().select().from(powerControllers)).toEqual([]);
  });

  it("admins set it (sealed, never answered), viewers read its state, operators power the PBS on; DELETE removes it", async () => {
    expect((await call(PUT, operator, targetId, "PUT", redfishBody())).status).toBe(403);
    const set = await call(PUT, admin, targetId, "PUT", redfishBody());
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({
      hostId: null,
      targetId,
      kind: "redfish",
      hasPassword: true,
    });
    expect(set.body).not.toHaveProperty("password");
    const [row] = await getDb()
      .select()
      .from(powerControllers)
      .where(eq(powerControllers.targetId, targetId));
    expect(row!.sealedSecret).not.toContain("BmcSecret-123");

    // Read now: On while the PBS runs; its certificate pinned at first contact.
    const read = await call(GET, viewer, targetId, "GET", undefined, "?read=true");
    expect(read.status).toBe(200);
    expect(read.body.state).toMatchObject({ state: "on" });
    expect((read.body.controller as { certSha256: string }).certSha256).toBe(
      bmc.node(pbs.name).redfish.certSha256,
    );

    // Powered on while on: nothing sent.
    const chassis = bmc.node(pbs.name).chassis;
    const powerOn = (user: TestUser) => call(POWER_ON, user, targetId, "POST");
    expect((await powerOn(viewer)).status).toBe(403);
    const already = await powerOn(operator);
    expect(already.body).toMatchObject({ targetId, result: "already-on" });
    expect(chassis.powerOnRequests).toEqual([]);

    // Power cut: nothing answers on its port; the power-on goes out and the BMC reads On.
    await pbs.powerOff();
    expect(pbs.state).toBe("down");
    const sent = await powerOn(operator);
    expect(sent.status).toBe(200);
    expect(sent.body).toMatchObject({ targetId, result: "sent", after: { state: "on" } });
    expect(chassis.powerOnRequests).toHaveLength(1);

    const audit = await getDb()
      .select({ action: auditLog.action })
      .from(auditLog)
      .orderBy(asc(auditLog.id));
    expect(audit.map((a) => a.action)).toEqual(
      expect.arrayContaining(["power.target_controller_set", "power.target_power_on"]),
    );

    expect((await call(DELETE, operator, targetId, "DELETE")).status).toBe(403);
    expect((await call(DELETE, admin, targetId, "DELETE")).body).toEqual({
      targetId,
      deleted: "redfish",
    });
    expect((await call(DELETE, admin, targetId, "DELETE")).status).toBe(404);
    const none = await call(GET, admin, targetId, "GET", undefined, "?read=true");
    expect(none.body).toEqual({ targetId, controller: null, state: null });
    expect((await powerOn(operator)).status).toBe(409);
  });

  it("the table holds a controller for exactly one of a host or a target: neither is refused by the database", async () => {
    await expect(
      getDb().insert(powerControllers).values({
        kind: "wol",
        port: 9,
        mac: "52:54:00:aa:bb:cc",
        broadcastAddress: "127.0.0.1",
        sealedSecret: "not-a-secret",
      }),
    ).rejects.toMatchObject({ cause: { constraint: "power_controllers_one_owner" } });
  });
});
