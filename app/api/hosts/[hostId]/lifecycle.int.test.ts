import { desc, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getDb } from "@/lib/db/client";
import { auditLog, credentials, hosts, runs } from "@/lib/db/schema";
import { seal } from "@/lib/secrets/seal";
import { startLab, type LabNode } from "@/lab";
import { createTestUser, type TestUser } from "@/test/auth";
import { registerProcessTestDatabase } from "@/test/process-database";
import * as clearPinRoute from "./clear-pin/route";
import * as decommissionRoute from "./decommission/route";
import * as hostRoute from "./route";
import * as testConnectionRoute from "./test-connection/route";
import { insertPinnedLabHost } from "@/test/pinned-lab-host";

// The route handlers use the process-wide database from DATABASE_URL, as in production; no
// worker runs, so a started run stays `running`. SSH goes to a real lab node.
registerProcessTestDatabase();
let node: LabNode;
let viewer: TestUser;
let operator: TestUser;
let admin: TestUser;

beforeAll(async () => {
  const db = getDb();
  [viewer, operator, admin] = await Promise.all([
    createTestUser(db, "viewer"),
    createTestUser(db, "operator"),
    createTestUser(db, "admin"),
  ]);
  node = await startLab();
});

afterAll(async () => {
  await node.stop();
});

let counter = 0;
/** The lab node as an onboarded host would have it: password stored, host key pinned. */
async function labHost(): Promise<string> {
  const db = getDb();
  const [credential] = await db
    .insert(credentials)
    .values({ kind: "password", sealed: seal(JSON.stringify({ password: node.ssh.password })) })
    .returning({ id: credentials.id });
  return insertPinnedLabHost(db, node, {
    name: `api-life-${++counter}`,
    credentialId: credential!.id,
  });
}

const params = (hostId: string) => ({ params: Promise.resolve({ hostId }) });
const request = (user: TestUser, method: string, body?: unknown) =>
  new Request("http://test", {
    method,
    headers: user.authHeaders({ "content-type": "application/json" }),
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
  });
const settingsBody = (patch: Record<string, unknown> = {}) => ({
  address: node.ssh.host,
  sshPort: node.ssh.port,
  sshUser: node.ssh.username,
  authMethod: "keep",
  ...patch,
});
async function lastAudit(action: string) {
  const [row] = await getDb()
    .select()
    .from(auditLog)
    .where(eq(auditLog.action, action))
    .orderBy(desc(auditLog.id))
    .limit(1);
  return row;
}
const hostOf = async (hostId: string) =>
  (await getDb().select().from(hosts).where(eq(hosts.id, hostId)))[0];

describe("host lifecycle in the JSON API", () => {
  it("PATCH with a wrong password: 400 with the field error, nothing saved, audited as a failure without the secret", async () => {
    const hostId = await labHost();
    const before = await hostOf(hostId);
    const response = await hostRoute.PATCH(
      request(
        operator,
        "PATCH",
        settingsBody({ authMethod: "password", password: "hunter2-wrong" }),
      ),
      params(hostId),
    );
    expect(response.status).toBe(400);
    const body = (await response.json()) as {
      error: string;
      fieldErrors: Record<string, string[]>;
    };
    expect(body.fieldErrors.password).toEqual(["The host refused this password."]);
    expect(JSON.stringify(body)).not.toContain("hunter2-wrong");
    expect(await hostOf(hostId)).toEqual(before);
    const audit = await lastAudit("host.edit");
    expect(audit).toMatchObject({ outcome: "failure", target: `host:${hostId}` });
    expect(JSON.stringify(audit)).not.toContain("hunter2-wrong");
  });

  it("PATCH: a viewer gets 403; bad input is 400 with field errors, never 500; an operator's tested edit is saved and audited", async () => {
    const hostId = await labHost();
    expect(
      (await hostRoute.PATCH(request(viewer, "PATCH", settingsBody()), params(hostId))).status,
    ).toBe(403);
    const bad = await hostRoute.PATCH(
      request(operator, "PATCH", settingsBody({ sshPort: "twenty-two", address: "a b;rm" })),
      params(hostId),
    );
    expect(bad.status).toBe(400);
    expect(Object.keys(((await bad.json()) as { fieldErrors: object }).fieldErrors).sort()).toEqual(
      ["address", "sshPort"],
    );
    expect(
      (await hostRoute.PATCH(request(operator, "PATCH", "{not json"), params(hostId))).status,
    ).toBe(400);

    const ok = await hostRoute.PATCH(
      request(
        operator,
        "PATCH",
        settingsBody({ authMethod: "password", password: node.ssh.password }),
      ),
      params(hostId),
    );
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({
      changes: ["new SSH password"],
      test: { hostKeySha256: node.ssh.hostKeySha256, privilege: "root" },
    });
    const audit = await lastAudit("host.edit");
    expect(audit).toMatchObject({
      outcome: "success",
      actorName: operator.user.name,
      detail: { credential: "password", sshPort: node.ssh.port },
    });
    expect(JSON.stringify(audit)).not.toContain(node.ssh.password);
  });

  it("POST test-connection answers the offered key and saves nothing", async () => {
    const hostId = await labHost();
    const before = await hostOf(hostId);
    const response = await testConnectionRoute.POST(
      request(operator, "POST", settingsBody()),
      params(hostId),
    );
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      hostKeySha256: node.ssh.hostKeySha256,
      privilege: "root",
    });
    expect(await hostOf(hostId)).toEqual(before);
  });

  it("POST clear-pin: only the pinned fingerprint clears it, audited with that fingerprint", async () => {
    const hostId = await labHost();
    const wrong = await clearPinRoute.POST(
      request(operator, "POST", { fingerprint: `SHA256:${"A".repeat(43)}` }),
      params(hostId),
    );
    expect(wrong.status).toBe(409);
    expect((await hostOf(hostId))!.hostKeySha256).toBe(node.ssh.hostKeySha256);
    const missing = await clearPinRoute.POST(request(operator, "POST", {}), params(hostId));
    expect(missing.status).toBe(400);
    const cleared = await clearPinRoute.POST(
      request(operator, "POST", { fingerprint: node.ssh.hostKeySha256 }),
      params(hostId),
    );
    expect(cleared.status).toBe(200);
    expect((await hostOf(hostId))!.hostKeySha256).toBeNull();
    expect(await lastAudit("host.clear_pin")).toMatchObject({
      outcome: "success",
      detail: { fingerprint: node.ssh.hostKeySha256 },
    });
  });

  it("DELETE: refused for a host that is not retired (409) and for an operator (403); an admin deletes a retired host, audited with its name", async () => {
    const hostId = await labHost();
    const started = await decommissionRoute.POST(request(operator, "POST"), params(hostId));
    expect(started.status).toBe(201);
    const { runId } = (await started.json()) as { runId: string };
    const again = await decommissionRoute.POST(request(operator, "POST"), params(hostId));
    expect(again.status).toBe(409);

    const notRetired = await hostRoute.DELETE(request(admin, "DELETE"), params(hostId));
    expect(notRetired.status).toBe(409);
    expect(((await notRetired.json()) as { error: string }).error).toMatch(
      /only a retired host can be deleted/,
    );
    expect(await hostOf(hostId)).toBeDefined();

    // What the decommission pipeline's last step does (the pipeline itself is proven in
    // lib/hosts/decommission-host.int.test.ts; no worker runs here).
    await getDb()
      .update(runs)
      .set({ status: "succeeded", finishedAt: new Date() })
      .where(eq(runs.id, runId));
    await getDb().update(hosts).set({ retiredAt: new Date() }).where(eq(hosts.id, hostId));
    const name = (await hostOf(hostId))!.name;

    expect((await hostRoute.DELETE(request(operator, "DELETE"), params(hostId))).status).toBe(403);
    const deleted = await hostRoute.DELETE(request(admin, "DELETE"), params(hostId));
    expect(deleted.status).toBe(200);
    expect(await deleted.json()).toMatchObject({ hostId, name, runs: 1 });
    expect(await hostOf(hostId)).toBeUndefined();
    expect(await lastAudit("host.delete")).toMatchObject({
      outcome: "success",
      actorName: admin.user.name,
      target: `host:${hostId}`,
      detail: { name, address: node.ssh.host },
    });
    expect((await hostRoute.GET(request(viewer, "GET"), params(hostId))).status).toBe(404);
  });
});
