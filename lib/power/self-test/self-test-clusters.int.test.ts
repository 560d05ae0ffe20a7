import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { powerClusters, powerTargets } from "@/lib/db/schema";
import { refreshClusterGroups } from "@/lib/power/cluster-refresh/refresh-cluster-groups";
import { readPowerSettings, writePowerSettings } from "@/lib/power/config/power-settings-store";
import type { ShutdownSettings } from "@/lib/power/config/settings";
import { seedActiveLabHost } from "@/test/fixtures/active-lab-host";
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
    // The console's candidates: a VM on the RBD pool, a container on local storage.
    guests: [
      { vmid: 500, type: "qemu", node: "pve1", name: "clupilot", storage: "ceph" },
      { vmid: 501, type: "lxc", node: "pve2", name: "clupilot-ct", storage: "local" },
    ],
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
      // No console guest is set yet: it cannot tell (see "the console's own guest" below).
      ["cluster-console-guest", "could-not-check"],
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

describe("the self-test: the console's own guest on Ceph", () => {
  const setConsoleGuest = async (consoleGuest: ShutdownSettings["consoleGuest"]) => {
    const { shutdown } = await readPowerSettings(database.db);
    await writePowerSettings(database.db, { shutdown: { ...shutdown, consoleGuest } });
  };
  const consoleGuestCheck = async () => (await clusterChecks())["console-guest"]!;

  it("without a console guest set says it cannot tell, never ok, and what to set", async () => {
    await setConsoleGuest(null);
    const check = await consoleGuestCheck();
    expect(check.verdict).toBe("could-not-check");
    expect(check.reason).toContain("No console guest is set (shutdown.consoleGuest)");
    expect(check.next).toContain("set shutdown.consoleGuest to its node and VMID");
  });

  it("a console VM whose disk lives on the RBD pool is a warning naming the disk and what to do", async () => {
    await setConsoleGuest({ node: "pve1", vmid: 500 });
    const check = await consoleGuestCheck();
    expect(check.verdict).toBe("warning");
    expect(check.reason).toContain(
      "The console's guest 500 (clupilot) on pve1 keeps scsi0 on vm-pool (rbd) on Ceph",
    );
    expect(check.reason).toContain("the console freezes in the middle of the sequence");
    expect(check.next).toContain("Move that volume to storage local to the node");
  });

  it("a console container on local storage passes, naming where its volume lives", async () => {
    await setConsoleGuest({ node: "pve2", vmid: 501 });
    const check = await consoleGuestCheck();
    expect(check).toMatchObject({
      verdict: "ok",
      reason:
        "The console's guest 501 (clupilot-ct) on pve2 keeps its volumes off Ceph: rootfs on local (dir).",
    });
  });

  it("a storage the token may not audit leaves the disk's storage unknown: could not check", async () => {
    await setConsoleGuest({ node: "pve1", vmid: 500 });
    const root = cluster.nodes[0]!.root;
    const before = readUserCfg(root);
    const cfg = readUserCfg(root);
    cfg.roles.set(
      "CluPilot",
      cfg.roles
        .get("CluPilot")!
        .filter((p) => p !== "Datastore.Audit" && p !== "Datastore.AllocateSpace"),
    );
    writeUserCfg(root, cfg);
    try {
      const check = await consoleGuestCheck();
      expect(check.verdict).toBe("could-not-check");
      expect(check.reason).toContain(
        "scsi0 on vm-pool, on storage the console's token may not audit",
      );
      expect(check.next).toContain("Datastore.Audit on /storage");
    } finally {
      writeUserCfg(root, before);
    }
  });

  it("a console guest the cluster does not have fails: the sequence would not spare the real one", async () => {
    await setConsoleGuest({ node: "pve1", vmid: 599 });
    try {
      const check = await consoleGuestCheck();
      expect(check.verdict).toBe("failed");
      expect(check.reason).toContain("The cluster has no guest 599");
    } finally {
      await setConsoleGuest(null);
    }
  });
});
