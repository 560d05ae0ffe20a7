import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { powerClusters, powerTargets } from "@/lib/db/schema";
import { refreshClusterGroups } from "@/lib/power/clusters/refresh-cluster-groups";
import { seedActiveLabHost } from "@/lib/power/clusters/test-helpers";
import { startLabCluster, type LabCluster } from "@/lab";
import { readUserCfg, writeUserCfg } from "@/lab/pve/access";
import { registerTestDatabase } from "@/test/db";
import { addUps, persistReading, protectHost } from "@/test/fixtures/power";
import { runSelfTest } from "./run-self-test";
import type { SelfTestCheck } from "./verdict";

const database = registerTestDatabase();
let cluster: LabCluster;
const hostIds = new Map<string, string>();
const targetIds = new Map<string, string>();
let upsId: string;

beforeAll(async () => {
  // Hyper-converged; the Ceph monitor is pve3 alone, so "monitors last" has one node to check.
  cluster = await startLabCluster({
    nodes: 3,
    name: "selftest-lab",
    ceph: { monitors: ["pve3"] },
    apiAuthFailureDelayMs: 50,
  });
  upsId = await addUps(database.db, "ups-cluster");
  for (const node of cluster.nodes) {
    const hostId = await seedActiveLabHost(database.db, {
      nodeName: node.name,
      port: node.api.port,
      certSha256: node.api.certSha256,
      token: cluster.token,
    });
    hostIds.set(node.name, hostId);
    targetIds.set(node.name, await protectHost(database.db, hostId, { feeds: [upsId] }));
  }
  await persistReading(database.db, upsId, false);
  expect(await refreshClusterGroups(database.db, { all: true })).toBe(3);
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
});

async function clusterChecks(): Promise<Record<string, SelfTestCheck>> {
  const result = await runSelfTest(database.db, { occasion: "button", timeoutMs: 3000 });
  return Object.fromEntries(
    result.checks
      .filter((c) => c.key.startsWith("cluster-"))
      .map((c) => [c.key.split(":")[0]!.replace("cluster-", ""), c]),
  );
}

const setPolicy = (policy: "cluster" | "per-host") =>
  database.db.update(powerClusters).set({ policy }).where(eq(powerClusters.name, "selftest-lab"));

describe("the self-test, once per cluster", () => {
  it("a member's token without the cluster's privileges fails, naming HA disarm and Ceph flags", async () => {
    // The lab's seeded console role predates the cluster privileges CreateApiToken grants now.
    const result = await runSelfTest(database.db, { occasion: "button", timeoutMs: 3000 });
    const privileges = result.checks.find((c) => c.key === `privileges:${targetIds.get("pve1")}`)!;
    expect(privileges.verdict).toBe("failed");
    expect(privileges.reason).toContain("lacks Sys.Console on / (power: disarm and re-arm HA");
    expect(privileges.reason).toContain("Sys.Modify on / (power: set and clear Ceph flags");
    expect(privileges.reason).not.toContain("Sys.PowerMgmt");

    // What CreateApiToken grants on an onboarded node.
    const root = cluster.nodes[0]!.root;
    const cfg = readUserCfg(root);
    cfg.roles.set("CluPilot", [...cfg.roles.get("CluPilot")!, "Sys.Console", "Sys.Modify"]);
    writeUserCfg(root, cfg);
  });

  it("passes a quorate, fully protected cluster with HA armed and no flag set; members need the cluster's privileges", async () => {
    const result = await runSelfTest(database.db, { occasion: "button", timeoutMs: 3000 });
    const cluster = result.checks.filter((c) => c.key.startsWith("cluster-"));
    expect(cluster.map((c) => [c.key.split(":")[0], c.verdict])).toEqual([
      ["cluster-protection", "ok"],
      ["cluster-monitors", "ok"],
      ["cluster-quorum", "ok"],
      ["cluster-leftovers", "ok"],
      ["cluster-ha-policy", "ok"],
    ]);
    const privileges = result.checks.find((c) => c.key === `privileges:${targetIds.get("pve1")}`)!;
    expect(privileges.verdict).toBe("ok");
    for (const held of ["Sys.PowerMgmt", "Sys.Console", "VM.PowerMgmt", "VM.Audit", "Sys.Modify"]) {
      expect(privileges.reason).toContain(held);
    }
  });

  it("Ceph flags and a disarmed HA left over from an earlier outage fail, naming each", async () => {
    cluster.model.ceph!.flags.add("noout");
    cluster.model.armedState = "disarmed";
    try {
      const leftovers = (await clusterChecks()).leftovers!;
      expect(leftovers.verdict).toBe("failed");
      expect(leftovers.reason).toContain("HA is disarmed");
      expect(leftovers.reason).toContain("Ceph flags noout are still set");
      expect(leftovers.next).toContain("arm-ha");
    } finally {
      cluster.model.ceph!.flags.delete("noout");
      cluster.model.armedState = "armed";
    }
  });

  it("host by host, a Ceph monitor node ordered first fails, and an HA policy that moves guests is a warning", async () => {
    await setPolicy("per-host");
    await database.db
      .update(powerTargets)
      .set({ stage: 1 })
      .where(eq(powerTargets.id, targetIds.get("pve1")!));
    try {
      const checks = await clusterChecks();
      expect(checks.monitors).toMatchObject({
        verdict: "failed",
        reason: expect.stringContaining(
          "Ceph monitor pve3 (stage 0) goes down no later than the other nodes (last stage 1)",
        ),
      });
      expect(checks["ha-policy"]).toMatchObject({
        verdict: "warning",
        reason: expect.stringContaining("shutdown_policy=conditional"),
        next: expect.stringContaining("freeze"),
      });
    } finally {
      await setPolicy("cluster");
      await database.db
        .update(powerTargets)
        .set({ stage: 0 })
        .where(eq(powerTargets.id, targetIds.get("pve1")!));
    }
  });

  it("a member the console does not protect is named", async () => {
    await database.db.delete(powerTargets).where(eq(powerTargets.id, targetIds.get("pve2")!));
    try {
      const protection = (await clusterChecks()).protection!;
      expect(protection.verdict).toBe("warning");
      expect(protection.reason).toContain("pve2 is a member the console does not protect");
    } finally {
      targetIds.set(
        "pve2",
        await protectHost(database.db, hostIds.get("pve2")!, { feeds: [upsId] }),
      );
    }
  });

  it("a cluster without quorum fails", async () => {
    await cluster.powerOff("pve2");
    await cluster.powerOff("pve3");
    try {
      const quorum = (await clusterChecks()).quorum!;
      expect(quorum.verdict).toBe("failed");
      expect(quorum.reason).toContain("pve1 reports no quorum");
    } finally {
      await cluster.powerOn("pve2");
      await cluster.powerOn("pve3");
    }
  });
});
