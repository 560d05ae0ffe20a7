import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { startLab, type LabNode } from "@/lab";
import { startLabPowerControllers, type LabPowerControllers } from "@/lab/power-controllers";
import { wireHostBmc } from "@/lab/power-controllers/host-bmc";
import { getDb } from "@/lib/db/client";
import { credentials, powerControllers } from "@/lib/db/schema";
import { seal } from "@/lib/secrets/seal";
import { createTestUser, type TestUser } from "@/test/auth";
import { insertPinnedLabHost } from "@/test/pinned-lab-host";
import { registerProcessTestDatabase, routeParams } from "@/test/process-database";

import { POST } from "./route";

/*
 * POST /api/hosts/{id}/power-controller/bmc-report (issue 30, item 1): the console asks the
 * host over its pinned SSH key, as root, what its BMC reports (`ipmitool lan print`). The lab
 * host's in-band ipmitool is the real ipmitool talking to the node's lab BMC (Debian's
 * ipmi_sim), whose LAN address an admin set with `ipmitool lan set`. A suggestion only:
 * nothing is stored.
 */

registerProcessTestDatabase();
let withBmc: LabNode;
let without: LabNode;
let bmc: LabPowerControllers;
let admin: TestUser;
let operator: TestUser;
const hostIds = new Map<LabNode, string>();

beforeAll(async () => {
  const db = getDb();
  [admin, operator] = await Promise.all([
    createTestUser(db, "admin"),
    createTestUser(db, "operator"),
  ]);
  [withBmc, without] = await Promise.all([startLab({ name: "pve-bmc" }), startLab()]);
  let on = true;
  bmc = await startLabPowerControllers({
    nodes: [
      {
        name: withBmc.name,
        isOn: () => on,
        powerOn: () => {
          on = true;
          return Promise.resolve();
        },
        powerOff: () => {
          on = false;
          return Promise.resolve();
        },
      },
    ],
    password: "BmcLanSecret-1",
  });
  await wireHostBmc(withBmc, bmc, { address: "192.0.2.201", mac: "52:54:00:12:34:56" });
  for (const [i, node] of [withBmc, without].entries()) {
    const [credential] = await db
      .insert(credentials)
      .values({ kind: "password", sealed: seal(JSON.stringify({ password: node.ssh.password })) })
      .returning({ id: credentials.id });
    hostIds.set(
      node,
      await insertPinnedLabHost(db, node, { name: `bmc-${i}`, credentialId: credential!.id }),
    );
  }
}, 120_000);

afterAll(async () => {
  await bmc?.stop();
  await Promise.all([withBmc?.stop(), without?.stop()]);
});

async function ask(user: TestUser, hostId: string) {
  const response = await POST(
    new Request(`http://test/api/hosts/${hostId}/power-controller/bmc-report`, {
      method: "POST",
      headers: user.authHeaders(),
    }),
    routeParams({ hostId }),
  );
  const text = await response.text();
  expect(text).not.toContain("BmcLanSecret");
  return { status: response.status, body: JSON.parse(text) as Record<string, unknown> };
}

describe("POST /api/hosts/{id}/power-controller/bmc-report", () => {
  it("reports the address and MAC the host's BMC has, and sets nothing", async () => {
    const answer = await ask(admin, hostIds.get(withBmc)!);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body).toEqual({
      kind: "found",
      address: "192.0.2.201",
      mac: "52:54:00:12:34:56",
      addressSource: "Static Address",
    });
    expect(await getDb().select().from(powerControllers)).toEqual([]);
  });

  it("a host without an IPMI device says so and what to load", async () => {
    const answer = await ask(admin, hostIds.get(without)!);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ kind: "no-device" });
    expect(answer.body.detail).toMatch(/modprobe ipmi_si ipmi_devintf/);
  });

  it("is for admins; a host id that is not one is a 400, an unknown one a 404", async () => {
    expect((await ask(operator, hostIds.get(withBmc)!)).status).toBe(403);
    expect((await ask(admin, "not-a-uuid")).status).toBe(400);
    expect((await ask(admin, "00000000-0000-4000-8000-000000000000")).status).toBe(404);
  });
});
