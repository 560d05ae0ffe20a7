import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "@/lib/db/client";
import { credentials, powerClusterMemberships } from "@/lib/db/schema";
import type { THostCluster } from "@/lib/hosts/schemas";
import { CONSOLE_TOKEN_ID } from "@/lib/proxmox/console-identity";
import { withClusterRefresh } from "@/lib/registry/pipelines";
import { unseal } from "@/lib/secrets/seal";
import { createOnboardHostPipeline } from "@/lib/steps/onboarding";
import { createCluster, joinCluster } from "@/lib/steps/onboarding/cluster-membership";
import { onboardingConfigFromEnv } from "@/lib/steps/onboarding/config";
import { connectHost } from "@/lib/steps/onboarding/connect-host";
import { createApiToken } from "@/lib/steps/onboarding/create-api-token";
import { verifyProxmoxApi } from "@/lib/steps/onboarding/verify-proxmox-api";
import type { LabNode } from "@/lab";
import { startStepHarness, type StepHarness } from "@/test/fixtures/step-harness";
import { hostRow, succeededRun } from "@/test/runs";
import { waitFor } from "@/test/worker-process";
import { loadClusterGroups } from "../clusters/load-cluster-groups";
import { addLabClusterHost } from "@/test/cluster-host";

// Issue 31, item 8: a host whose onboarding creates or joins a cluster is in power's cluster
// group as soon as its run succeeds — through the real worker, with the registry's hook, and
// no refresh asked by anyone: the worker runs without its crontab (no minute's cron refresh),
// and the test never calls the refresh itself.
const pipeline = withClusterRefresh(
  createOnboardHostPipeline(onboardingConfigFromEnv({}), {
    steps: [connectHost, createCluster, joinCluster, createApiToken, verifyProxmoxApi],
  }),
);

let db: Database;
let harness: StepHarness;
beforeAll(async () => {
  harness = await startStepHarness({
    pipelines: { [pipeline.name]: pipeline },
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

const ip = (i: number) => `192.0.2.${80 + i}`;
let counter = 0;
async function addHost(node: LabNode, cluster: THostCluster) {
  const added = await addLabClusterHost(db, node, `p-${++counter}`, cluster);
  await succeededRun(db, added.runId);
  return added.hostId;
}

/** Power's groups once the named cluster lists exactly these nodes, each matched to a host. */
async function groupListing(name: string, nodes: string[]) {
  return waitFor(
    `power's cluster group ${name} to list ${nodes.join(", ")}`,
    async () => {
      const groups = await loadClusterGroups(db);
      const group = groups.find((g) => g.name === name);
      const known = group?.nodes.filter((n) => n.hostId !== null).map((n) => n.name);
      return JSON.stringify(known) === JSON.stringify(nodes) && { groups, group: group! };
    },
    120_000,
    100,
  );
}

describe("power sees a cluster host the moment its onboarding succeeds", () => {
  it("a created cluster, then a joined member, are in power's cluster group without any refresh call, and every member is asked with the cluster's one token", async () => {
    const a = await harness.lab({ name: "pve1", address: `${ip(1)}/24` });
    const b = await harness.lab({ name: "pve2", address: `${ip(2)}/24` });
    const first = await addHost(a, { mode: "create", name: "powc", link0: ip(1) });
    const afterCreate = await groupListing("powc", ["pve1"]);
    expect(afterCreate.group.nodes.map((n) => n.hostId)).toEqual([first]);

    const second = await addHost(b, { mode: "join", memberHostId: first, link0: ip(2) });
    const { groups, group } = await groupListing("powc", ["pve1", "pve2"]);
    expect(groups).toHaveLength(1);
    expect(group).toMatchObject({ quorate: true });
    expect(group.nodes.map((n) => [n.name, n.hostId, n.online])).toEqual([
      ["pve1", first, true],
      ["pve2", second, true],
    ]);

    // Both were asked (with the token each host row holds) and answered: one token, one secret.
    const asked = await db.select().from(powerClusterMemberships);
    expect(asked.map((m) => [m.hostId, m.clusterId, m.askError]).sort()).toEqual(
      [first, second].map((id) => [id, group.id, null]).sort(),
    );
    const secrets = new Set<string>();
    for (const hostId of [first, second]) {
      const host = await hostRow(db, hostId);
      expect(host.apiTokenId).toBe(CONSOLE_TOKEN_ID);
      const [row] = await db
        .select()
        .from(credentials)
        .where(eq(credentials.id, host.apiTokenCredentialId!));
      secrets.add(unseal(row!.sealed));
    }
    expect(secrets.size).toBe(1);
  });
});
