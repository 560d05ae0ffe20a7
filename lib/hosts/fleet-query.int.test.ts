import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/node-postgres";
import type pg from "pg";
import { beforeAll, describe, expect, it } from "vitest";
import { createDb, type Database } from "@/lib/db/client";
import * as schema from "@/lib/db/schema";
import { ABORT_REASON } from "@/lib/pipeline/abort-reason";
import { recoverDeadWorkers } from "@/lib/pipeline/recovery";
import { createTestDatabase, registerTestDatabase } from "@/test/db";
import { removeFleet, seedFleet, seedStateOf } from "@/test/fleet-seed";
import { queryFleet } from "./fleet-query";
import { ZFleetQuery } from "./fleet-schemas";
import { hostStateOf } from "./host-state";
import { hostStateSql } from "./host-state-sql";
import { listHosts, type HostSummary } from "./list-hosts";

const testDatabase = registerTestDatabase(4);
let all: HostSummary[];

const HOSTS = 200;

beforeAll(async () => {
  await seedFleet(testDatabase.url, { hosts: HOSTS, runsPerHost: 3 });
  all = await listHosts(testDatabase.db);
});

const fleet = (input: Record<string, string | number>) =>
  queryFleet(testDatabase.db, ZFleetQuery.parse(input));
const names = (hosts: HostSummary[]) => hosts.map((h) => h.name);
const seedName = (i: number) => `fleet-${String(i).padStart(5, "0")}`;

describe("fleet query", () => {
  it("derives each host's state from its latest run, as the seed laid them out", () => {
    expect(all).toHaveLength(HOSTS);
    for (const host of all) {
      const i = Number(host.name.slice("fleet-".length));
      expect(host.state, host.name).toBe(seedStateOf(i));
    }
  });

  it("seeded running runs carry a pending tick, so a console's recovery never ticks them", async () => {
    const report = await recoverDeadWorkers(testDatabase.db, []);
    expect(report.rescheduledRuns).toEqual([]);
  });

  it("the SQL state derivation gives hostStateOf's answer for every combination", async () => {
    for (const status of ["running", "succeeded", "failed", null] as const) {
      for (const pipeline of ["onboard-host", "decommission-host", null]) {
        for (const retiredAt of [null, new Date("2026-01-01T00:00:00Z")]) {
          for (const failureReason of [null, ABORT_REASON, "apt-get failed"]) {
            const { rows } = await testDatabase.db.execute<{ state: string }>(
              sql`select ${hostStateSql({
                retiredAt: sql`${retiredAt?.toISOString() ?? null}::timestamptz`,
                runStatus: sql`${status}::run_status`,
                pipeline: sql`${pipeline}::text`,
                failureReason: sql`${failureReason}::text`,
              })} as state`,
            );
            expect(
              rows[0]!.state,
              `${status} ${pipeline} ${String(retiredAt)} ${failureReason}`,
            ).toBe(hostStateOf(status, { retiredAt, pipeline, failureReason }));
          }
        }
      }
    }
  });

  it("counts per state in SQL match the rows, and pages cover every host once, by name", async () => {
    const first = await fleet({ limit: 50 });
    expect(first.total).toBe(HOSTS);
    for (const state of ["active", "onboarding", "failed"] as const) {
      expect(first.countsByState[state], state).toBe(all.filter((h) => h.state === state).length);
    }
    const seen: string[] = [];
    for (let page = 1; page <= first.page.totalPages; page++) {
      seen.push(...names((await fleet({ limit: 50, page })).hosts));
    }
    expect(seen).toEqual(names(all));
    expect(first.page).toEqual({ number: 1, size: 50, totalPages: 4 });
    expect((await fleet({ page: 99 })).hosts).toEqual([]);
  });

  it("search matches name, address and node name, case-insensitively and trimmed", async () => {
    expect(names((await fleet({ q: "  FLEET-00042 " })).hosts)).toEqual([seedName(42)]);
    expect(names((await fleet({ q: "10.0.0.199" })).hosts)).toEqual([seedName(199)]);
    expect(names((await fleet({ q: "pve-node-123" })).hosts)).toEqual([seedName(123)]);
    const narrowing = await fleet({ q: "fleet-001", limit: 200 });
    expect(narrowing.total).toBe(all.filter((h) => h.name.includes("fleet-001")).length);
    // The counts follow the search: they say what each state chip would show now.
    expect(Object.values(narrowing.countsByState).reduce((a, b) => a + b, 0)).toBe(narrowing.total);
  });

  it("search treats % and _ as the characters they are, not wildcards", async () => {
    expect((await fleet({ q: "%" })).total).toBe(0);
    expect((await fleet({ q: "_" })).total).toBe(0);
    expect((await fleet({ q: "fleet_0004" })).total).toBe(0);
    expect((await fleet({ q: "\\" })).total).toBe(0);
  });

  it("filters by several states, by failed step and by needs attention", async () => {
    const both = await fleet({ state: "failed,onboarding", limit: 200 });
    expect(both.total).toBe(all.filter((h) => h.state !== "active").length);
    expect(both.hosts.every((h) => h.state !== "active")).toBe(true);
    // The state filter leaves the state counts alone (they are the chips' numbers).
    expect(both.countsByState.active).toBe(all.filter((h) => h.state === "active").length);

    const step = both.hosts.find((h) => h.state === "failed")!.run!.failedStep!;
    const atStep = await fleet({ failedStep: step, limit: 200 });
    const expected = all.filter((h) => h.state === "failed" && h.run!.failedStep === step);
    expect(names(atStep.hosts)).toEqual(names(expected));
    expect(atStep.failedSteps.find((f) => f.step === step)?.count).toBe(expected.length);

    const attention = await fleet({ attention: "1", limit: 200 });
    const needing = all.filter((h) => h.attention.length > 0);
    expect(names(attention.hosts)).toEqual(names(needing));
    expect(attention.attentionCount).toBe(needing.length);
    // Each kind of reason is represented, and the SQL and TS definitions agree host by host.
    for (const reason of ["failed", "templates missing", "templates unchecked", "stalled"]) {
      expect(
        needing.some((h) => h.attention.includes(reason as never)),
        reason,
      ).toBe(true);
    }
    const stalled = all.filter((h) => h.stalled);
    expect(stalled.map((h) => Number(h.name.slice(6)) % 20)).toEqual(stalled.map(() => 19));
  });

  it("sorts by state (failed first), address and last update, both directions", async () => {
    const byState = await fleet({ sort: "state", limit: 200 });
    const rank = {
      failed: 0,
      aborted: 1,
      onboarding: 2,
      decommissioning: 3,
      active: 4,
      retired: 5,
    } as const;
    const states = byState.hosts.map((h) => rank[h.state]);
    expect(states).toEqual([...states].sort((a, b) => a - b));
    const byStateDesc = await fleet({ sort: "state", dir: "desc", limit: 1 });
    expect(byStateDesc.hosts[0]!.state).toBe("active");

    const byAddress = await fleet({ sort: "address", dir: "desc", limit: 200 });
    const addresses = byAddress.hosts.map((h) => h.address);
    expect(addresses).toEqual([...addresses].sort().reverse());

    const byUpdated = await fleet({ sort: "updated", limit: 200 });
    const times = byUpdated.hosts.map((h) => Date.parse(h.run!.createdAt));
    expect(times).toEqual([...times].sort((a, b) => b - a));
  });

  it("rejects bad parameters with field errors", () => {
    const result = ZFleetQuery.safeParse({
      q: "x".repeat(101),
      state: "failed,broken",
      sort: "color",
      dir: "up",
      page: "0",
      limit: "5000",
      attention: "maybe",
      failedStep: "a;b",
    });
    expect(result.success).toBe(false);
    const fields = new Set(result.error!.issues.map((issue) => String(issue.path[0])));
    expect([...fields].sort()).toEqual(
      ["attention", "dir", "failedStep", "limit", "page", "q", "sort", "state"].sort(),
    );
  });

  it("filters by cluster and lists every cluster of the fleet with its count, whatever the filters", async () => {
    const inCluster = (name: string | null, i: number[]) =>
      testDatabase.db.execute(
        sql`update hosts set cluster_name = ${name} where name in (${sql.join(
          i.map((n) => sql`${seedName(n)}`),
          sql`, `,
        )})`,
      );
    await inCluster("alpha", [1, 2, 3]);
    await inCluster("beta", [4]);
    try {
      const alpha = await fleet({ cluster: "alpha" });
      expect(alpha.total).toBe(3);
      expect(names(alpha.hosts).sort()).toEqual([seedName(1), seedName(2), seedName(3)]);
      expect(alpha.clusters).toEqual([
        { name: "alpha", count: 3 },
        { name: "beta", count: 1 },
      ]);
      // The choices do not narrow with the other filters: a cluster is never hidden by them.
      expect((await fleet({ q: seedName(4) })).clusters).toEqual(alpha.clusters);
      expect((await fleet({ cluster: "gamma" })).total).toBe(0);
    } finally {
      await inCluster(null, [1, 2, 3, 4]);
    }
  });
});

/** A plan node of `EXPLAIN (FORMAT JSON)`, as far as these checks read it. */
type PlanNode = {
  "Node Type": string;
  "Relation Name"?: string;
  "Index Name"?: string;
  "Scan Direction"?: string;
  Plans?: PlanNode[];
};

const planNodes = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(planNodes)];

/** Every statement `run` sends through a drizzle handle on `pool`, with the plan Postgres picks. */
async function plansOf(pool: pg.Pool, run: (db: Database) => Promise<unknown>) {
  const statements: { sql: string; params: unknown[] }[] = [];
  const logged = drizzle(pool, {
    schema,
    logger: { logQuery: (query, params) => statements.push({ sql: query, params }) },
  });
  await run(logged);
  return Promise.all(
    statements.map(async (statement) => {
      const explained = await pool.query<{ "QUERY PLAN": [{ Plan: PlanNode }] }>(
        `explain (format json) ${statement.sql}`,
        statement.params,
      );
      return { sql: statement.sql, nodes: planNodes(explained.rows[0]!["QUERY PLAN"][0].Plan) };
    }),
  );
}

describe("fleet query at 10 000 hosts and 50 000 runs", () => {
  it("finds each host's latest run through the index runs(host_id, created_at), read backwards, never by scanning runs", async () => {
    const big = await createTestDatabase();
    const bigHandle = createDb(big.url, 2);
    try {
      await seedFleet(big.url, { hosts: 10_000, runsPerHost: 5, prefix: "big" });
      await bigHandle.pool.query("analyze");
      const query = ZFleetQuery.parse({ q: "", sort: "state" });
      const page = await queryFleet(bigHandle.db, query);
      expect(page.total).toBe(10_000);
      expect(page.hosts).toHaveLength(50);
      const narrowed = await queryFleet(bigHandle.db, ZFleetQuery.parse({ q: "big-0999" }));
      expect(narrowed.total).toBe(10); // big-09990 … big-09999

      // How fast that is on this machine is bench:fleet's to say; what makes it fast is here.
      const plans = await plansOf(bigHandle.pool, (db) => queryFleet(db, query));
      // Both statements (facets and ids, then the page's rows) read runs only that way.
      expect(plans).toHaveLength(2);
      for (const plan of plans) {
        const onRuns = plan.nodes.filter((node) => node["Relation Name"] === "runs");
        expect(onRuns.length, plan.sql).toBeGreaterThan(0);
        for (const node of onRuns)
          expect(node, plan.sql).toMatchObject({
            "Node Type": expect.stringMatching(/^Index (Only )?Scan$/),
            "Index Name": "runs_host_id_idx",
            "Scan Direction": "Backward",
          });
      }

      await removeFleet(big.url, "big");
      const after = await queryFleet(bigHandle.db, query);
      expect(after.total).toBe(0);
    } finally {
      await bigHandle.pool.end();
      await big.drop();
    }
  }, 120_000);
});
