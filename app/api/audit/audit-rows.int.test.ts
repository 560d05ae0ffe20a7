import { beforeAll, describe, expect, it } from "vitest";
import type { AuditPage } from "@/lib/audit/list-audit";
import { getDb } from "@/lib/db/client";
import { createTestUser, type TestUser } from "@/test/auth";
import { routeParams as params, registerProcessTestDatabase } from "@/test/process-database";
import * as catalogVersions from "../catalog/plans/[planId]/versions/route";
import * as catalogPlans from "../catalog/plans/route";
import * as publish from "../catalog/versions/[versionId]/publish/route";
import * as hostRuns from "../hosts/[hostId]/runs/route";
import * as hosts from "../hosts/route";
import * as abort from "../runs/[runId]/abort/route";
import * as retry from "../runs/[runId]/retry/route";
import * as tokenRoute from "../tokens/[tokenId]/route";
import * as tokens from "../tokens/route";
import * as userRoute from "../users/[userId]/route";
import * as users from "../users/route";
import * as audit from "./route";

/*
 * Issue 7: "audit rows exist for each audited action, with actor and outcome". Each action is
 * done through the JSON API as a real admin, and its row is then read back through the audit
 * log's own API, the way the audit page reads it.
 */

registerProcessTestDatabase();
let admin: TestUser;

beforeAll(async () => {
  admin = await createTestUser(getDb(), "admin");
});

const send = (method: string, body?: unknown) =>
  new Request("http://test/api", {
    method,
    headers: admin.authHeaders({ "content-type": "application/json" }),
    body: body === undefined ? undefined : JSON.stringify(body),
  });

async function entries(action: string) {
  const response = await audit.GET(
    new Request(`http://test/api/audit?action=${action}`, { headers: admin.authHeaders() }),
  );
  expect(response.status).toBe(200);
  return ((await response.json()) as AuditPage).entries;
}

async function expectAudited(action: string, outcome: string, target?: string) {
  const rows = await entries(action);
  expect(
    rows.some(
      (row) =>
        row.actorName === admin.user.name &&
        row.actorUserId === admin.user.id &&
        row.outcome === outcome &&
        (target === undefined || row.target === target),
    ),
    `${action} ${outcome} ${target ?? ""}: ${JSON.stringify(rows)}`,
  ).toBe(true);
}

describe("every audited action leaves a row with its actor and outcome", () => {
  it("hosts and runs: host.create, run.abort, run.retry (refused: failure), host.reonboard", async () => {
    const created = await hosts.POST(
      send("POST", {
        name: "audit-pve",
        address: "127.0.0.1",
        sshPort: 1,
        sshUser: "root",
        authMethod: "password",
        password: "audit-test-password",
      }),
    );
    expect(created.status).toBe(201);
    const { hostId, runId } = (await created.json()) as { hostId: string; runId: string };
    await expectAudited("host.create", "success", `host:${hostId}`);

    expect((await retry.POST(send("POST"), params({ runId }))).status).toBe(409);
    await expectAudited("run.retry", "failure", `run:${runId}`);

    expect((await abort.POST(send("POST"), params({ runId }))).status).toBe(202);
    await expectAudited("run.abort", "success", `run:${runId}`);

    const again = await hostRuns.POST(send("POST"), params({ hostId }));
    expect([201, 409]).toContain(again.status);
    await expectAudited("host.reonboard", again.status === 201 ? "success" : "failure");
  });

  it("a row whose target is a host or one of its runs names that host (issue 19: rows named only run:<uuid>)", async () => {
    const created = await hosts.POST(
      send("POST", {
        name: "audit-named",
        address: "127.0.0.1",
        sshPort: 1,
        sshUser: "root",
        authMethod: "password",
        password: "audit-test-password",
      }),
    );
    const { hostId, runId } = (await created.json()) as { hostId: string; runId: string };
    await abort.POST(send("POST"), params({ runId }));
    for (const [action, target] of [
      ["host.create", `host:${hostId}`],
      ["run.abort", `run:${runId}`],
    ]) {
      const row = (await entries(action!)).find((entry) => entry.target === target);
      expect(row?.host, action).toEqual({ id: hostId, name: "audit-named" });
    }
    const user = (await entries("user.create"))[0];
    expect(user?.host ?? null).toBeNull();
  });

  it("catalog: catalog.plan_create, catalog.version_create, catalog.version_publish", async () => {
    const plan = await catalogPlans.POST(send("POST", { slug: "audit-plan", name: "Audit plan" }));
    expect(plan.status).toBe(201);
    const { planId } = (await plan.json()) as { planId: string };
    await expectAudited("catalog.plan_create", "success");
    const version = await catalogVersions.POST(
      send("POST", { planId, templateVmid: 9100, cores: 2, memoryMib: 2048, diskGib: 20 }),
      params({ planId }),
    );
    expect(version.status).toBe(201);
    const { planVersionId } = (await version.json()) as { planVersionId: string };
    await expectAudited("catalog.version_create", "success");
    expect(
      (await publish.POST(send("POST"), params({ versionId: planVersionId }))).status,
    ).toBeLessThan(300);
    await expectAudited("catalog.version_publish", "success");
  });

  it("users and tokens: user.create, user.role_change, user.disable, user.enable, token.create, token.revoke", async () => {
    const user = await users.POST(
      send("POST", { name: "audit-bob", role: "viewer", password: "a long enough password" }),
    );
    expect(user.status).toBe(201);
    const { id: userId } = (await user.json()) as { id: string };
    await expectAudited("user.create", "success", "user:audit-bob");
    for (const [body, action] of [
      [{ role: "operator" }, "user.role_change"],
      [{ disabled: true }, "user.disable"],
      [{ disabled: false }, "user.enable"],
    ] as const) {
      expect((await userRoute.PATCH(send("PATCH", body), params({ userId }))).status).toBe(200);
      await expectAudited(action, "success");
    }

    const token = await tokens.POST(send("POST", { label: "audit" }));
    expect(token.status).toBe(201);
    const { id: tokenId } = (await token.json()) as { id: string };
    await expectAudited("token.create", "success");
    expect((await tokenRoute.DELETE(send("DELETE"), params({ tokenId }))).status).toBeLessThan(300);
    await expectAudited("token.revoke", "success");
  });
});
