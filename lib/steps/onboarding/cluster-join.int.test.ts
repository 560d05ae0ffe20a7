import fs from "node:fs";
import path from "node:path";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "@/lib/db/client";
import { hosts } from "@/lib/db/schema";
import type { THostCluster } from "@/lib/hosts/schemas";
import { retryRun } from "@/lib/runs/retry-run";
import type { LabNode } from "@/lab";
import { labExec } from "@/lab/test-helpers";
import { apiGet, tokenAuth } from "@/lab/pve/test-helpers";
import { startStepHarness, type StepHarness } from "@/test/fixtures/step-harness";
import { hostRow, hostTokenSecret, runLogText, settled, succeededRun } from "@/test/runs";
import { createOnboardHostPipeline } from ".";
import { createCluster, joinCluster } from "./cluster-membership";
import { onboardingConfigFromEnv } from "./config";
import { connectHost } from "./connect-host";
import { CONSOLE_TOKEN_ID } from "@/lib/proxmox/console-identity";
import { createApiToken } from "./create-api-token";
import { verifyProxmoxApi } from "./verify-proxmox-api";
import { buildVmTemplate } from "./build-vm-template";
import { verifyVmTemplate } from "./verify-vm-template";
import { createTemplate } from "@/lab/pve/seed";
import { apiTestPipeline, publishTemplates, testConfig } from "@/test/fixtures/api-steps";
import { startTestRun } from "@/test/runs";
import { addLabClusterHost } from "@/test/cluster-host";

// Onboarding builds a cluster (issue 31), through the real worker and lab nodes that already
// run Proxmox VE: one host creates the cluster, the next ones join it, the console's token is
// made once and found again on every member. The steps before ConnectHost…ConfigureProxmox are
// proven elsewhere; these hosts start where ConfigureProxmox leaves one.
const config = onboardingConfigFromEnv({});
const pipeline = createOnboardHostPipeline(config, {
  steps: [connectHost, createCluster, joinCluster, createApiToken, verifyProxmoxApi],
});
// Templates on a cluster: the VMID is the cluster's, built once.
const templates = apiTestPipeline("test-cluster-templates", [
  connectHost,
  buildVmTemplate(testConfig),
  verifyVmTemplate,
]);

let db: Database;
let harness: StepHarness;
beforeAll(async () => {
  harness = await startStepHarness({
    pipelines: { [pipeline.name]: pipeline, [templates.name]: templates },
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

let counter = 0;
const ip = (i: number) => `192.0.2.${40 + i}`;
async function labNode(i: number, name = `pve${i}`) {
  return harness.lab({ name, address: `${ip(i)}/24` });
}
const addHost = (node: LabNode, cluster: THostCluster) =>
  addLabClusterHost(db, node, `c-${++counter}`, cluster);
const finished = (runId: string) => settled(db, runId, 300_000);
const succeeded = (runId: string) => succeededRun(db, runId);
const tokenSecret = (hostId: string) => hostTokenSecret(db, hostId);
const corosyncOf = (node: LabNode) =>
  fs.readFileSync(path.join(node.root, "etc/pve/corosync.conf"), "utf8");

let first: { node: LabNode; hostId: string };
const members: { node: LabNode; hostId: string }[] = [];

describe("onboarding builds a cluster", () => {
  it("one host creates, two join → a quorate 3-node cluster with one console token valid on all three", async () => {
    const a = await labNode(1);
    const created = await addHost(a, { mode: "create", name: "labc", link0: ip(1) });
    await succeeded(created.runId);
    first = { node: a, hostId: created.hostId };
    expect(await hostRow(db, created.hostId)).toMatchObject({
      clusterName: "labc",
      clusterMode: "create",
    });
    const createLog = await runLogText(db, created.runId);
    expect(createLog).toContain("pvecm create 'labc' --link0 '192.0.2.41'");
    members.push(first);

    for (const i of [2, 3]) {
      const node = await labNode(i);
      const joined = await addHost(node, {
        mode: "join",
        memberHostId: created.hostId,
        link0: ip(i),
      });
      await succeeded(joined.runId);
      const log = await runLogText(db, joined.runId);
      expect(log).toContain(
        `pvecm add '${ip(1)}' --fingerprint '${a.api.certSha256}' --link0 '${ip(i)}'`,
      );
      expect(log).toContain(`adopted the secret of token ${CONSOLE_TOKEN_ID}`);
      expect(log).not.toContain(a.ssh.password);
      expect(await hostRow(db, joined.hostId)).toMatchObject({ clusterName: "labc" });
      members.push({ node, hostId: joined.hostId });
    }

    const secret = await tokenSecret(created.hostId);
    for (const { node, hostId } of members) {
      expect(await tokenSecret(hostId)).toBe(secret);
      const status = await apiGet(
        node,
        "/cluster/status",
        tokenAuth({ id: CONSOLE_TOKEN_ID, secret }),
      );
      expect(status.status).toBe(200);
      const entries = status.json!.data as {
        type: string;
        name: string;
        quorate?: number;
        online?: number;
      }[];
      expect(entries[0]).toMatchObject({ type: "cluster", name: "labc", nodes: 3, quorate: 1 });
      expect(entries.filter((e) => e.type === "node").map((e) => [e.name, e.online])).toEqual([
        ["pve1", 1],
        ["pve2", 1],
        ["pve3", 1],
      ]);
    }
    // One token line in the cluster's token.cfg: made once, never rotated by a member.
    const tokenCfg = fs.readFileSync(path.join(a.root, "etc/pve/priv/token.cfg"), "utf8");
    expect(tokenCfg.split("\n").filter((l) => l.startsWith(CONSOLE_TOKEN_ID))).toHaveLength(1);

    // A second onboarding of a member changes nothing: already a member, quorate.
    const again = await db.transaction(async (tx) => {
      const { startRun } = await import("@/lib/runs/start-run");
      return startRun(tx, { pipeline, hostId: members[1]!.hostId, actor: "test" });
    });
    await succeeded(again);
    expect(await runLogText(db, again)).toContain(
      "already in place: pve2 is a member of cluster 'labc', quorate",
    );
  });

  it("refuses a member whose pinned certificate is not the one its API presents, a duplicate node name and a node with a guest — changing nothing", async () => {
    const before = corosyncOf(first.node);

    // Wrong fingerprint: the console's pin for the member is not what the member presents.
    const d = await labNode(4);
    const [memberRow] = await db.select().from(hosts).where(eq(hosts.id, first.hostId));
    const wrongPin = "AA:".repeat(31) + "AA";
    await db.update(hosts).set({ apiCertSha256: wrongPin }).where(eq(hosts.id, first.hostId));
    const wrong = await finished(
      (await addHost(d, { mode: "join", memberHostId: first.hostId, link0: ip(4) })).runId,
    );
    await db
      .update(hosts)
      .set({ apiCertSha256: memberRow!.apiCertSha256 })
      .where(eq(hosts.id, first.hostId));
    expect(wrong).toMatchObject({ status: "failed", failedStep: "JoinCluster" });
    expect(wrong.failureReason).toContain("does not present the certificate the console pinned");
    expect(wrong.failureReason).toContain("Nothing was changed");

    // A node named like a member.
    const clash = await labNode(5, "pve2");
    const dup = await finished(
      (await addHost(clash, { mode: "join", memberHostId: first.hostId, link0: ip(5) })).runId,
    );
    expect(dup).toMatchObject({ status: "failed", failedStep: "JoinCluster" });
    expect(dup.failureReason).toContain("a node named pve2 is already in cluster 'labc'");

    // A node with a guest.
    const g = await labNode(6);
    expect((await labExec(g, "qm create 100 --name g --memory 512")).code).toBe(0);
    const guest = await finished(
      (await addHost(g, { mode: "join", memberHostId: first.hostId, link0: ip(6) })).runId,
    );
    expect(guest).toMatchObject({ status: "failed", failedStep: "JoinCluster" });
    expect(guest.failureReason).toContain("pve6 holds 1 guest(s)");

    expect(corosyncOf(first.node)).toBe(before);
    for (const node of [d, clash, g]) {
      expect(fs.existsSync(path.join(node.root, "etc/pve/corosync.conf"))).toBe(false);
    }
    // The guest is still there.
    expect(fs.existsSync(path.join(g.root, "etc/pve/qemu-server/100.conf"))).toBe(true);
  });

  it("refuses while the cluster has no quorum, while a clock is not synchronised, and a link0 that is not the host's", async () => {
    const before = corosyncOf(first.node);
    const [, b, c] = members.map((m) => m.node);

    const n8 = await labNode(8);
    await b!.switches.apply({ "pve.corosyncDown": true });
    await c!.switches.apply({ "pve.corosyncDown": true });
    const noQuorum = await finished(
      (await addHost(n8, { mode: "join", memberHostId: first.hostId, link0: ip(8) })).runId,
    );
    await b!.switches.apply({ "pve.corosyncDown": false });
    await c!.switches.apply({ "pve.corosyncDown": false });
    expect(noQuorum).toMatchObject({ status: "failed", failedStep: "JoinCluster" });
    expect(noQuorum.failureReason).toContain("cluster 'labc' has no quorum");

    const n9 = await labNode(9);
    n9.setDebianFaults({ clockUnsynchronised: true });
    const clock = await finished(
      (await addHost(n9, { mode: "join", memberHostId: first.hostId, link0: ip(9) })).runId,
    );
    expect(clock).toMatchObject({ status: "failed", failedStep: "JoinCluster" });
    expect(clock.failureReason).toContain("the clock of pve9 is not synchronised");

    const n10 = await labNode(10);
    const notOwn = await finished(
      (await addHost(n10, { mode: "create", name: "other", link0: ip(11) })).runId,
    );
    expect(notOwn).toMatchObject({ status: "failed", failedStep: "CreateCluster" });
    expect(notOwn.failureReason).toContain(`link0 ${ip(11)} is not an address of pve10`);

    expect(corosyncOf(first.node)).toBe(before);
    for (const node of [n8, n9, n10]) {
      expect(fs.existsSync(path.join(node.root, "etc/pve/corosync.conf"))).toBe(false);
    }
  });

  it("a join killed half-way is refused with what to fix, and Retry finishes it", async () => {
    const h = await labNode(7);
    await h.switches.apply({ "pve.clusterJoinDiesHalfWay": true });
    const { hostId, runId } = await addHost(h, {
      mode: "join",
      memberHostId: first.hostId,
      link0: ip(7),
    });
    const died = await finished(runId);
    expect(died).toMatchObject({ status: "failed", failedStep: "JoinCluster" });
    expect(died.failureReason).toContain("died half-way");
    expect(died.failureReason).toContain("Retry finishes it");
    expect(corosyncOf(first.node)).toContain("name: pve7");

    await h.switches.apply({ "pve.clusterJoinDiesHalfWay": false });
    await retryRun(db, { runId, actor: "test" });
    await succeeded(runId);
    expect(await runLogText(db, runId)).toContain(
      "an earlier join died half-way; finishing it with pvecm add --force",
    );
    expect(await hostRow(db, hostId)).toMatchObject({ clusterName: "labc" });
    const nodes = await labExec(h, "pvecm nodes");
    expect(nodes.stdout).toContain("pve7 (local)");
  });

  it("a template another member holds is the cluster's: a member does not build it again; a plain VM of that VMID elsewhere is refused, untouched", async () => {
    const [a, b] = members;
    createTemplate(a!.node.root, "pve1", 9100);
    await publishTemplates(db, [9100]);
    const run = await finished(await startTestRun(db, templates, b!.hostId));
    if (run.status !== "succeeded")
      throw new Error(`${run.failureReason}\n${await runLogText(db, run.id)}`);
    expect(await runLogText(db, run.id)).toContain("already in place");
    expect(fs.existsSync(path.join(a!.node.root, "etc/pve/nodes/pve2/qemu-server/9100.conf"))).toBe(
      false,
    );

    expect((await labExec(a!.node, "qm create 9101 --name plain --memory 512")).code).toBe(0);
    await publishTemplates(db, [9101]);
    const refused = await finished(await startTestRun(db, templates, b!.hostId));
    expect(refused).toMatchObject({ status: "failed", failedStep: "BuildVmTemplate" });
    expect(refused.failureReason).toContain(
      "VMID 9101 exists in the cluster on pve1 and is not a template",
    );
    expect(fs.existsSync(path.join(a!.node.root, "etc/pve/nodes/pve1/qemu-server/9101.conf"))).toBe(
      true,
    );
    expect(fs.existsSync(path.join(a!.node.root, "etc/pve/nodes/pve2/qemu-server/9101.conf"))).toBe(
      false,
    );
  });
});
