import { eq, sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { getDb } from "@/lib/db/client";
import { powerClusters } from "@/lib/db/schema";
import { CLUSTER_REFRESH_TASK } from "@/lib/power/cluster-refresh/refresh-task";
import { CONSOLIDATE_ON_CEPH, DEFAULT_CONSOLIDATE_SETTINGS } from "@/lib/power/clusters/schemas";
import { createTestUser, type TestUser } from "@/test/auth";
import { routeParams as params, registerProcessTestDatabase } from "@/test/process-database";
import * as clusterRoute from "./[clusterId]/route";
import * as refreshRoute from "./refresh/route";
import * as clustersRoute from "./route";

// The route handlers use the process-wide database from DATABASE_URL, as in production.
registerProcessTestDatabase();
let admin: TestUser;
let operator: TestUser;
let viewer: TestUser;

beforeAll(async () => {
  admin = await createTestUser(getDb(), "admin");
  operator = await createTestUser(getDb(), "operator");
  viewer = await createTestUser(getDb(), "viewer");
});

type ErrorBody = { error: string; fieldErrors: Record<string, string[]> };

const send = (method: string, path: string, user: TestUser | null, body?: unknown): Request =>
  new Request(`http://test${path}`, {
    method,
    headers: { ...(user ? user.authHeaders() : {}), "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });

async function seedCluster(name: string, hyperConverged: boolean): Promise<string> {
  const [row] = await getDb()
    .insert(powerClusters)
    .values({
      name,
      hyperConverged,
      quorate: true,
      nodes: [{ name: "pve1", ip: "10.0.0.1", online: true, nodeid: 1, cephMon: hyperConverged }],
      refreshedAt: new Date("2026-12-01T10:00:00Z"),
    })
    .returning({ id: powerClusters.id });
  return row!.id;
}

const refreshJobs = async () =>
  (
    await getDb().execute<{ n: number }>(
      sql`select count(*)::int as n from graphile_worker.jobs where task_identifier = ${CLUSTER_REFRESH_TASK}`,
    )
  ).rows[0]!.n;

describe("power clusters JSON API", () => {
  it("GET lists the groups for a viewer (no member known: no host on the node); 401 without a session", async () => {
    await seedCluster("api-plain", false);
    const answer = await clustersRoute.GET(send("GET", "/api/power/clusters", viewer));
    expect(answer.status).toBe(200);
    const { clusters } = (await answer.json()) as {
      clusters: { name: string; nodes: unknown[] }[];
    };
    expect(clusters.find((c) => c.name === "api-plain")).toMatchObject({
      policy: "cluster",
      hyperConverged: false,
      quorate: true,
      refreshedAt: "2026-12-01T10:00:00.000Z",
      refreshError: null,
      nodes: [
        {
          name: "pve1",
          online: true,
          cephMon: false,
          hostId: null,
          hostName: null,
          protected: false,
          askError: null,
        },
      ],
    });
    expect((await clustersRoute.GET(send("GET", "/api/power/clusters", null))).status).toBe(401);
  });

  it("PATCH sets the policy for admins only; consolidate on Ceph is 400 with the reason under policy", async () => {
    const ceph = await seedCluster("api-ceph", true);
    const path = `/api/power/clusters/${ceph}`;
    const patch = (user: TestUser, body: unknown) =>
      clusterRoute.PATCH(send("PATCH", path, user, body), params({ clusterId: ceph }));
    expect((await patch(operator, { policy: "per-host" })).status).toBe(403);
    const refused = await patch(admin, { policy: "consolidate" });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as ErrorBody).fieldErrors.policy).toEqual([CONSOLIDATE_ON_CEPH]);
    const set = await patch(admin, { policy: "per-host" });
    expect(set.status).toBe(200);
    expect(await set.json()).toEqual({
      cluster: {
        id: ceph,
        name: "api-ceph",
        policy: "per-host",
        consolidate: DEFAULT_CONSOLIDATE_SETTINGS,
      },
    });
    const [row] = await getDb().select().from(powerClusters).where(eq(powerClusters.id, ceph));
    expect(row!.policy).toBe("per-host");
    const unknown = await clusterRoute.PATCH(
      send("PATCH", "/api/power/clusters/x", admin, { policy: "cluster" }),
      params({ clusterId: "not-a-uuid" }),
    );
    expect(unknown.status).toBe(400);
  });

  it("POST refresh queues one job for operators (body {}); any field is refused and queues nothing; viewers 403", async () => {
    const post = (user: TestUser, body: unknown) =>
      refreshRoute.POST(send("POST", "/api/power/clusters/refresh", user, body));
    expect((await post(viewer, {})).status).toBe(403);
    expect((await post(operator, { all: false })).status).toBe(400);
    expect(await refreshJobs()).toBe(0);
    expect((await post(operator, {})).status).toBe(202);
    expect((await post(admin, {})).status).toBe(202);
    expect(await refreshJobs()).toBe(1);
  });
});
