import { eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";

import { getDb } from "@/lib/db/client";
import { auditLog, consoleKeyCredentials, hosts } from "@/lib/db/schema";
import { createTestUser, type TestUser } from "@/test/auth";
import { routeParams as params, registerProcessTestDatabase } from "@/test/process-database";
import * as hostsRoute from "../hosts/route";
import * as rotateRoute from "./rotate/route";
import * as rotationRoute from "./rotations/[rotationId]/route";
import * as keyRoute from "./route";

// The route handlers use the process-wide database from DATABASE_URL, as in production. No
// worker runs here: the rotation's own behaviour is tested in lib/console-key.
registerProcessTestDatabase();
let viewer: TestUser;
let operator: TestUser;
let admin: TestUser;

beforeAll(async () => {
  viewer = await createTestUser(getDb(), "viewer");
  operator = await createTestUser(getDb(), "operator");
  admin = await createTestUser(getDb(), "admin");
});

const get = (user: TestUser) =>
  keyRoute.GET(new Request("http://test/api/console-key", { headers: user.authHeaders() }));
const rotate = (user: TestUser, body = "") =>
  rotateRoute.POST(
    new Request("http://test/api/console-key/rotate", {
      method: "POST",
      headers: user.authHeaders({ "content-type": "application/json" }),
      body,
    }),
  );
type Overview = {
  key: { id: string; publicKey: string; fingerprint: string; state: string };
  installCommand: string;
  hostCount: number;
  rotation: { id: string } | null;
};

describe("console key JSON API", () => {
  let overview: Overview;

  it("GET /api/console-key shows the public key and install command to a viewer, never the private key", async () => {
    const response = await get(viewer);
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).not.toMatch(/PRIVATE KEY|sealed/i);
    overview = JSON.parse(text) as Overview;
    expect(overview.key.publicKey).toMatch(/^ssh-ed25519 AAAA\S+ clupilot-console@/);
    expect(overview.key.state).toBe("active");
    expect(overview.installCommand).toContain(overview.key.publicKey);
    expect(overview.installCommand).toContain("~/.ssh/authorized_keys");
    expect(overview).toMatchObject({ hostCount: 0, rotation: null });
    expect((await keyRoute.GET(new Request("http://test/api/console-key"))).status).toBe(401);
  });

  it("POST /api/hosts takes authMethod console_key and records the key for the host", async () => {
    // Signed in by session cookie, as the browser is: the JSON body must still be readable.
    const response = await hostsRoute.POST(
      new Request("http://test/api/hosts", {
        method: "POST",
        headers: operator.cookieHeaders({ "content-type": "application/json" }),
        body: JSON.stringify({
          name: "on-console-key",
          address: "10.0.0.9",
          sshPort: 22,
          sshUser: "root",
          authMethod: "console_key",
          consoleKeyId: overview.key.id,
        }),
      }),
    );
    expect(response.status).toBe(201);
    const { hostId } = (await response.json()) as { hostId: string };
    const [host] = await getDb().select().from(hosts).where(eq(hosts.id, hostId));
    const [link] = await getDb()
      .select()
      .from(consoleKeyCredentials)
      .where(eq(consoleKeyCredentials.credentialId, host!.credentialId));
    expect(link!.consoleKeyId).toBe(overview.key.id);
    expect(((await (await get(viewer)).json()) as Overview).hostCount).toBe(1);
  });

  it("POST /api/console-key/rotate is for admins, validates its body, starts one rotation at a time", async () => {
    expect((await rotate(operator)).status).toBe(403);
    const bad = await rotate(admin, JSON.stringify({ force: true }));
    expect(bad.status).toBe(400);
    const started = await rotate(admin);
    expect(started.status).toBe(202);
    const body = (await started.json()) as { rotationId: string; runId: string; hostCount: number };
    expect(body.hostCount).toBe(1);
    expect((await rotate(admin, "{}")).status).toBe(409);

    const after = (await (await get(viewer)).json()) as Overview;
    expect(after.key.id).not.toBe(overview.key.id);
    expect(after.rotation?.id).toBe(body.rotationId);

    const status = await rotationRoute.GET(
      new Request(`http://test/api/console-key/rotations/${body.rotationId}`, {
        headers: viewer.authHeaders(),
      }),
      params({ rotationId: body.rotationId }),
    );
    expect(status.status).toBe(200);
    expect(await status.json()).toMatchObject({
      runId: body.runId,
      runStatus: "running",
      fromFingerprint: overview.key.fingerprint,
      hosts: [{ hostName: "on-console-key", outcome: "pending" }],
    });

    const audit = await getDb()
      .select()
      .from(auditLog)
      .where(eq(auditLog.action, "console_key.rotate"));
    expect(audit.map((a) => a.outcome).sort()).toEqual(["failure", "success"]);
  });

  it("GET a rotation: 400 for a malformed id, 404 for an unknown one", async () => {
    const call = (id: string) =>
      rotationRoute.GET(
        new Request(`http://test/api/console-key/rotations/${id}`, {
          headers: viewer.authHeaders(),
        }),
        params({ rotationId: id }),
      );
    expect((await call("nope")).status).toBe(400);
    expect((await call("0b7c6f1e-8d2a-4c1b-9f3e-2a5d6c7b8e9f")).status).toBe(404);
  });
});
