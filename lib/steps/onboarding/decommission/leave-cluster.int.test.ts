import fs from "node:fs";
import path from "node:path";
import { and, asc, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "@/lib/db/client";
import { powerClusterMemberships, runs, stepVisits } from "@/lib/db/schema";
import { AppError } from "@/lib/errors";
import { decommissionHost } from "@/lib/hosts/decommission-host";
import type { THostCluster } from "@/lib/hosts/schemas";
import { loadClusterGroups } from "@/lib/power/clusters/load-cluster-groups";
import { CONSOLE_TOKEN_ID } from "@/lib/proxmox/console-identity";
import { withClusterRefresh } from "@/lib/registry/pipelines";
import type { LabNode } from "@/lab";
import { waitUntil } from "@/lab/processes";
import { apiGet, apiPost, tokenAuth } from "@/lab/pve/test-helpers";
import { labExec } from "@/lab/test-helpers";
import { startStepHarness, type StepHarness } from "@/test/fixtures/step-harness";
import {
  hostRow,
  hostTokenSecret,
  runLogText,
  settled,
  startTestRun,
  succeededRun,
} from "@/test/runs";
import { waitFor } from "@/test/worker-process";
import { createOnboardHostPipeline } from "..";
import { createCluster, joinCluster } from "../cluster-membership";
import { onboardingConfigFromEnv } from "../config";
import { connectHost } from "../connect-host";
import { createApiToken } from "../create-api-token";
import { verifyProxmoxApi } from "../verify-proxmox-api";
import { createDecommissionHostPipeline } from ".";
import { addLabClusterHost } from "@/test/cluster-host";

// Issue 31, item 7, through the real worker and lab nodes that run Proxmox VE: a member of a
// cluster the console built is decommissioned — refused while it holds guests or while the
// cluster's quorum needs it (nothing changes), otherwise shut down, removed on a member that
// stays, its leftovers gone; power's cluster group follows by the registry's hook alone (the
// worker runs without its crontab, the test never asks for a refresh).
const config = onboardingConfigFromEnv({});
const onboard = withClusterRefresh(
  createOnboardHostPipeline(config, {
    steps: [connectHost, createCluster, joinCluster, createApiToken, verifyProxmoxApi],
  }),
);
const decommission = withClusterRefresh(createDecommissionHostPipeline(config));

let db: Database;
let harness: StepHarness;
beforeAll(async () => {
  harness = await startStepHarness({
    pipelines: { [onboard.name]: onboard, [decommission.name]: decommission },
    worker: { periodicChecks: false },
    lab: {
      state: "proxmox",
      debianState: "proxmox",
      timeScale: 0.01,
      pve: { apiAuthFailureDelayMs: 20 },
    },
  });
  db = harness.db;
}, 120_000);
afterAll(() => harness?.stop());

const ip = (i: number) => `192.0.2.${100 + i}`;
let counter = 0;
async function addHost(node: LabNode, cluster: THostCluster) {
  const added = await addLabClusterHost(db, node, `m-${++counter}`, cluster);
  await succeededRun(db, added.runId);
  return added.hostId;
}
const succeeded = (runId: string) => succeededRun(db, runId);
const tokenSecret = (hostId: string) => hostTokenSecret(db, hostId);
/** Power's group once it lists exactly these nodes, each matched to a host. */
async function powerGroup(nodes: string[]) {
  return waitFor(
    `power's cluster group to list ${nodes.join(", ")}`,
    async () => {
      const groups = await loadClusterGroups(db);
      const known = groups[0]?.nodes.filter((n) => n.hostId !== null).map((n) => n.name);
      return (
        groups.length === 1 &&
        JSON.stringify(known) === JSON.stringify(nodes) &&
        JSON.stringify(groups[0]!.nodes.map((n) => n.name)) === JSON.stringify(nodes) &&
        groups[0]!
      );
    },
    120_000,
    100,
  );
}
/** What a step's last visit of the run said (its result line on the timeline). */
async function stepResult(runId: string, step: string) {
  const rows = await db
    .select({ detail: stepVisits.detail })
    .from(stepVisits)
    .where(and(eq(stepVisits.runId, runId), eq(stepVisits.step, step)))
    .orderBy(asc(stepVisits.visit));
  return rows[rows.length - 1]?.detail ?? "";
}
const memberships = () =>
  db.select().from(powerClusterMemberships).orderBy(asc(powerClusterMemberships.hostId));

const nodes: LabNode[] = [];
const hostIds: string[] = [];
let secret = "";
const corosync = () => fs.readFileSync(path.join(nodes[0]!.root, "etc/pve/corosync.conf"), "utf8");

describe("a member leaves its cluster when it is decommissioned", () => {
  it("four hosts build one cluster; power's group lists all four", async () => {
    for (const i of [1, 2, 3, 4])
      nodes.push(await harness.lab({ name: `pve${i}`, address: `${ip(i)}/24` }));
    hostIds.push(await addHost(nodes[0]!, { mode: "create", name: "shrink", link0: ip(1) }));
    for (const i of [2, 3, 4])
      hostIds.push(
        await addHost(nodes[i - 1]!, { mode: "join", memberHostId: hostIds[0]!, link0: ip(i) }),
      );
    secret = await tokenSecret(hostIds[0]!);
    const group = await powerGroup(["pve1", "pve2", "pve3", "pve4"]);
    expect(group).toMatchObject({ name: "shrink", quorate: true });
  });

  it("a member an operator already shut down and removed by hand: the decommission goes on from there (leftovers, read-back)", async () => {
    const d = nodes[3]!;
    const off = await apiPost(
      d,
      "/nodes/pve4/status",
      tokenAuth({ id: CONSOLE_TOKEN_ID, secret }),
      {
        command: "shutdown",
      },
    );
    expect(off.status).toBe(200);
    await waitUntil(() => d.power.state === "down", { timeoutMs: 30_000, what: "pve4 down" });
    expect((await labExec(nodes[0]!, "pvecm delnode pve4")).code).toBe(0);
    expect(fs.existsSync(path.join(nodes[0]!.root, "etc/pve/nodes/pve4"))).toBe(true);

    const { runId } = await decommissionHost(db, { hostId: hostIds[3]!, actor: "test" });
    await succeeded(runId);
    const log = await runLogText(db, runId);
    expect(await stepResult(runId, "LeaveCluster")).toBe(
      "pve4 is no longer a member of 'shrink'; /etc/pve/nodes/pve4 removed; 'shrink' is pve1, pve2, pve3 (3 nodes), quorate",
    );
    expect(await stepResult(runId, "RemoveApiToken")).toContain(
      "is cluster 'shrink's one console token, used by the members that stay",
    );
    expect(log).toContain("rm -rf -- /etc/pve/nodes/'pve4'");
    expect(log).not.toContain("pvecm delnode");
    expect(fs.existsSync(path.join(nodes[0]!.root, "etc/pve/nodes/pve4"))).toBe(false);
    expect((await hostRow(db, hostIds[3]!)).retiredAt).not.toBeNull();
    await powerGroup(["pve1", "pve2", "pve3"]);
  });

  it("refuses a member that holds a guest, and one the cluster's quorum needs — before any run, and in LeaveCluster itself — nothing changes", async () => {
    const [a, b, c] = nodes as [LabNode, LabNode, LabNode];
    const before = corosync();
    const asked = await memberships();
    const runsBefore = await db.select().from(runs).where(eq(runs.hostId, hostIds[2]!));

    expect((await labExec(c, "qm create 120 --name keep --memory 512")).code).toBe(0);
    const withGuest = await decommissionHost(db, { hostId: hostIds[2]!, actor: "test" }).catch(
      (error: unknown) => error,
    );
    expect(withGuest).toBeInstanceOf(AppError);
    expect(withGuest).toMatchObject({ code: "conflict" });
    expect((withGuest as AppError).message).toContain(
      "m-3 cannot leave its cluster: pve3 holds 1 guest(s) (VMID 120)",
    );

    await b.switches.apply({ "pve.corosyncDown": true });
    expect((await labExec(c, "qm destroy 120")).code).toBe(0);
    const noMajority = await decommissionHost(db, { hostId: hostIds[2]!, actor: "test" }).catch(
      (error: unknown) => error,
    );
    expect((noMajority as AppError).message).toContain(
      "pve3 is needed for the quorate majority of 'shrink': 2 of 3 votes online, 1 without it",
    );
    // Neither started a run.
    expect(await db.select().from(runs).where(eq(runs.hostId, hostIds[2]!))).toEqual(runsBefore);

    // The step refuses on its own too (a run started however it was): nothing changes.
    const refused = await settled(db, await startTestRun(db, decommission, hostIds[2]!), 120_000);
    await b.switches.apply({ "pve.corosyncDown": false });
    expect(refused).toMatchObject({ status: "failed", failedStep: "LeaveCluster" });
    expect(refused.failureReason).toContain("pve3 is needed for the quorate majority");
    expect(refused.failureReason).toContain("Nothing was changed");

    expect(corosync()).toBe(before);
    expect(c.power.state).toBe("up");
    expect((await labExec(a, "pvecm status")).stdout).toContain("Nodes:            3");
    expect((await hostRow(db, hostIds[2]!)).retiredAt).toBeNull();
    expect((await apiGet(c, "/version", tokenAuth({ id: CONSOLE_TOKEN_ID, secret }))).status).toBe(
      200,
    );
    // No refresh was queued by a refusal: power's records are as they were.
    expect(await memberships()).toEqual(asked);
  });

  it("a member decommissioned: shut down (seen down), removed on a member that stays, leftovers gone → a quorate two-node cluster, power's group has two", async () => {
    const [a, b, c] = nodes as [LabNode, LabNode, LabNode];
    const { runId } = await decommissionHost(db, { hostId: hostIds[2]!, actor: "test" });
    const run = await succeeded(runId);
    expect(run.currentStep).toBe("MarkRetired");
    const log = await runLogText(db, runId);
    expect(log).toContain("asked pve3 to shut down (POST /nodes/pve3/status command=shutdown)");
    expect(log).toContain("$ pvecm delnode 'pve3'   (on m-1)");
    expect(await stepResult(runId, "LeaveCluster")).toBe(
      "pve3 shut down and removed from 'shrink' on m-1 (pvecm delnode); /etc/pve/nodes/pve3 removed; 'shrink' is pve1, pve2 (2 nodes), quorate",
    );
    expect(c.power.state).toBe("down");
    expect(corosync()).not.toContain("name: pve3");
    expect(fs.existsSync(path.join(a.root, "etc/pve/nodes/pve3"))).toBe(false);
    for (const node of [a, b]) {
      const status = await labExec(node, "pvecm status");
      expect(status.stdout).toContain("Quorate:          Yes");
      expect(status.stdout).toContain("Nodes:            2");
      // The cluster's one token still opens the members that stay.
      const version = await apiGet(node, "/version", tokenAuth({ id: CONSOLE_TOKEN_ID, secret }));
      expect(version.status).toBe(200);
    }
    const group = await powerGroup(["pve1", "pve2"]);
    expect(group).toMatchObject({ quorate: true });
    expect(group.nodes.map((n) => n.hostId)).toEqual([hostIds[0], hostIds[1]]);
  });
});
