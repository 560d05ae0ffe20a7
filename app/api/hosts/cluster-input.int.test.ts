import { eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { getDb } from "@/lib/db/client";
import { hosts } from "@/lib/db/schema";
import { ZCreateHost } from "@/lib/hosts/schemas";
import { createTestUser, type TestUser } from "@/test/auth";
import { registerProcessTestDatabase } from "@/test/process-database";
import * as hostsRoute from "./route";

// `POST /api/hosts` with `cluster` (issue 31): standalone, a new cluster, or joining one.
registerProcessTestDatabase();
let operator: TestUser;

beforeAll(async () => {
  operator = await createTestUser(getDb(), "operator");
});

let counter = 0;
const host = (cluster: unknown) => ({
  name: `pve-c${++counter}`,
  address: "10.0.0.5",
  sshPort: 22,
  sshUser: "root",
  authMethod: "password",
  password: "correct horse",
  ...(cluster === undefined ? {} : { cluster }),
});

async function post(body: unknown) {
  const response = await hostsRoute.POST(
    new Request("http://test/api/hosts", {
      method: "POST",
      headers: operator.authHeaders({ "content-type": "application/json" }),
      body: JSON.stringify(body),
    }),
  );
  return {
    status: response.status,
    body: (await response.json()) as {
      hostId?: string;
      error?: string;
      fieldErrors?: Record<string, string[]>;
    },
  };
}

describe("POST /api/hosts with a cluster", () => {
  it("stores standalone (no cluster given), create and join with their fields", async () => {
    const standalone = await post(host(undefined));
    expect(standalone.status).toBe(201);
    const created = await post(host({ mode: "create", name: "lab-01", link0: "10.0.0.5" }));
    expect(created.status).toBe(201);
    const rows = await getDb().select().from(hosts).where(eq(hosts.id, created.body.hostId!));
    expect(rows[0]).toMatchObject({
      clusterMode: "create",
      clusterName: "lab-01",
      clusterLink0: "10.0.0.5",
      clusterMemberHostId: null,
    });
    const [plain] = await getDb().select().from(hosts).where(eq(hosts.id, standalone.body.hostId!));
    expect(plain).toMatchObject({ clusterMode: "none", clusterName: null, clusterLink0: null });
  });

  it("answers hostile or wrong cluster input with field errors, never a 500", async () => {
    const cases: [unknown, string][] = [
      ["join", "cluster"],
      [null, "cluster"],
      [[], "cluster"],
      [{ mode: "bogus" }, "cluster.mode"],
      [{ mode: { $ne: 1 } }, "cluster.mode"],
      [{ mode: "create", name: "a".repeat(16), link0: "10.0.0.5" }, "cluster.name"],
      [{ mode: "create", name: "bad_name", link0: "10.0.0.5" }, "cluster.name"],
      [{ mode: "create", name: "-lead", link0: "10.0.0.5" }, "cluster.name"],
      [{ mode: "create", name: "x'; drop table hosts;--", link0: "10.0.0.5" }, "cluster.name"],
      [{ mode: "create", name: "ok\u0000", link0: "10.0.0.5" }, "cluster.name"],
      [{ mode: "create", name: "ok", link0: "pve1.example.com" }, "cluster.link0"],
      [{ mode: "create", name: "ok", link0: "999.1.1.1" }, "cluster.link0"],
      [{ mode: "create", name: "ok", link0: "10.0.0.5 --force" }, "cluster.link0"],
      [{ mode: "create", name: "ok" }, "cluster.link0"],
      [{ mode: "create", name: 7, link0: "10.0.0.5" }, "cluster.name"],
      [{ mode: "join", memberHostId: "../../etc", link0: "10.0.0.5" }, "cluster.memberHostId"],
      [{ mode: "join", link0: "10.0.0.5" }, "cluster.memberHostId"],
      [
        {
          mode: "join",
          memberHostId: "0b7c6f1e-8d2a-4c1b-9f3e-2a5d6c7b8e9f",
          link0: "x".repeat(5000),
        },
        "cluster.link0",
      ],
    ];
    for (const [cluster, field] of cases) {
      const answer = await post(host(cluster));
      expect(answer.status, JSON.stringify(cluster)).toBe(400);
      expect(Object.keys(answer.body.fieldErrors ?? {}), JSON.stringify(cluster)).toContain(field);
    }
    expect(
      await getDb()
        .select()
        .from(hosts)
        .where(eq(hosts.name, `pve-c${counter}`)),
    ).toEqual([]);
  });

  it("refuses to join through an unknown host or one that is not active", async () => {
    const unknown = await post(
      host({
        mode: "join",
        memberHostId: "0b7c6f1e-8d2a-4c1b-9f3e-2a5d6c7b8e9f",
        link0: "10.0.0.6",
      }),
    );
    expect(unknown.status).toBe(400);
    expect(unknown.body.fieldErrors?.["cluster.memberHostId"]?.[0]).toContain("No such host");

    // A host whose onboarding has only just started is not active.
    const fresh = await post(host(undefined));
    const notActive = await post(
      host({ mode: "join", memberHostId: fresh.body.hostId, link0: "10.0.0.6" }),
    );
    expect(notActive.status).toBe(400);
    expect(notActive.body.fieldErrors?.["cluster.memberHostId"]?.[0]).toContain("is not active");
  });

  it("filters the fleet by cluster; a bad cluster filter is a field error", async () => {
    const member = await post(host({ mode: "create", name: "lab-07", link0: "10.0.0.9" }));
    expect(member.status).toBe(201);
    const list = async (query: string) => {
      const response = await hostsRoute.GET(
        new Request(`http://test/api/hosts${query}`, { headers: operator.authHeaders() }),
      );
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    const filtered = await list("?cluster=lab-07");
    expect(filtered.status).toBe(200);
    const hostsOf = filtered.body.hosts as { id: string; proxmox: { cluster?: unknown } }[];
    expect(hostsOf.map((h) => h.id)).toEqual([member.body.hostId]);
    expect(hostsOf[0]!.proxmox.cluster).toEqual({ mode: "create", name: "lab-07" });
    for (const bad of ["x'--", "a".repeat(16), "%00"]) {
      const answer = await list(`?cluster=${encodeURIComponent(bad)}`);
      expect(answer.status, bad).toBe(400);
      expect(Object.keys(answer.body.fieldErrors as object)).toContain("cluster");
    }
  });

  it("takes the form's flat `cluster.*` fields as the same nested object", () => {
    const parsed = ZCreateHost.parse({
      ...host(undefined),
      "cluster.mode": "create",
      "cluster.name": "lab-02",
      "cluster.link0": "10.0.0.7",
      "cluster.memberHostId": "",
    });
    expect(parsed.cluster).toEqual({ mode: "create", name: "lab-02", link0: "10.0.0.7" });
    expect(ZCreateHost.parse(host(undefined)).cluster).toEqual({ mode: "none" });
  });
});
