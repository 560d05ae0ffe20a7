import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "@/lib/db/client";
import { apiGet, tokenAuth } from "@/lab/pve/test-helpers";
import { CONSOLE_TOKEN_ID } from "@/lib/proxmox/console-identity";
import type { THostCluster } from "@/lib/hosts/schemas";
import { startImageServer, type ImageServer, type LabNode } from "@/lab";
import { labProxmoxKeyring } from "@/lab/debian/apt-sources";
import { labExec } from "@/lab/test-helpers";
import { startStepHarness, type StepHarness } from "@/test/fixtures/step-harness";
import { hostRow, hostTokenSecret, succeededRun } from "@/test/runs";
import { createOnboardHostPipeline, onboardingSteps } from ".";
import { onboardingConfigFromEnv } from "./config";
import { addLabClusterHost } from "@/test/cluster-host";

// Three fresh Debian 13 lab hosts through the whole onboarding, in its real order (issue 31):
// the first creates the cluster, the other two join it after Proxmox VE is installed and the
// bridge is up, before their token is made; all three end active in one quorate cluster.
let db: Database;
let harness: StepHarness;
let image: ImageServer;

beforeAll(async () => {
  image = await startImageServer({ imageSizeBytes: 64 * 1024 });
  const config = {
    ...onboardingConfigFromEnv({} as NodeJS.ProcessEnv),
    minMemoryMiB: 256,
    minFreeDiskGiB: 1,
    ...labProxmoxKeyring(image.keyringUrl),
    pollSeconds: 0.2,
    rebootDeadlineSeconds: 60,
  };
  const pipeline = createOnboardHostPipeline(config);
  expect(pipeline.steps.map((s) => s.name)).toEqual(onboardingSteps(config).map((s) => s.name));
  harness = await startStepHarness({
    pipelines: { [pipeline.name]: pipeline },
    lab: { timeScale: 0.01, pve: { apiAuthFailureDelayMs: 20 } },
  });
  db = harness.db;
}, 120_000);
afterAll(async () => {
  await harness?.stop();
  await image?.stop();
});

const ip = (i: number) => `192.0.2.${60 + i}`;
let counter = 0;
const add = (node: LabNode, cluster: THostCluster) =>
  addLabClusterHost(db, node, `fresh-${++counter}`, cluster);
const tokenSecret = (hostId: string) => hostTokenSecret(db, hostId);
const active = (runId: string) => succeededRun(db, runId, 600_000);

describe("three fresh hosts onboarded into one cluster", () => {
  it("one creates, two join, all three active in a quorate 3-node cluster with one token valid on all three", async () => {
    const nodes: LabNode[] = [];
    for (const i of [1, 2, 3])
      nodes.push(await harness.lab({ name: `pve${i}`, address: `${ip(i)}/24` }));
    const first = await add(nodes[0]!, { mode: "create", name: "fresh", link0: ip(1) });
    await active(first.runId);
    // The two others onboard side by side, joining through the first.
    const joins = await Promise.all(
      [1, 2].map((k) =>
        add(nodes[k]!, { mode: "join", memberHostId: first.hostId, link0: ip(k + 1) }),
      ),
    );
    await Promise.all(joins.map((j) => active(j.runId)));
    for (const { hostId } of [first, ...joins]) {
      expect(await hostRow(db, hostId)).toMatchObject({ clusterName: "fresh" });
    }
    // One console token for the cluster, valid on every member's API.
    const secrets = await Promise.all([first, ...joins].map(({ hostId }) => tokenSecret(hostId)));
    expect(new Set(secrets).size).toBe(1);
    for (const node of nodes) {
      const version = await apiGet(
        node,
        "/version",
        tokenAuth({ id: CONSOLE_TOKEN_ID, secret: secrets[0]! }),
      );
      expect(version.status).toBe(200);
      const status = await labExec(node, "pvecm status");
      expect(status.stdout).toContain("Quorate:          Yes");
      expect(status.stdout).toContain("Nodes:            3");
    }
  });
});
