import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "@/lib/db/client";
import { startImageServer, startLabCluster, type ImageServer, type LabCluster } from "@/lab";
import { labProxmoxKeyringEnv } from "@/lab/debian/apt-sources";
import { createOnboardHostPipeline } from "@/lib/steps/onboarding";
import { onboardingConfigFromEnv } from "@/lib/steps/onboarding/config";
import { hostRow, insertLabHost, runToEnd } from "@/test/fixtures/api-steps";
import { startStepHarness, type StepHarness } from "@/test/fixtures/step-harness";
import { loadClusterGroups } from "./load-cluster-groups";
import { refreshClusterGroups } from "../cluster-refresh/refresh-cluster-groups";

let db: Database;
let harness: StepHarness;
let lab: LabCluster;
let images: ImageServer;
let onboard: ReturnType<typeof createOnboardHostPipeline>;

beforeAll(async () => {
  // The whole onboarding pipeline, as Add host starts it, pointed at the lab's stand-ins for
  // Proxmox's keyring and the cloud image (as `npm run lab` prints them for the console).
  images = await startImageServer();
  onboard = createOnboardHostPipeline(
    onboardingConfigFromEnv({
      CLUPILOT_CLOUD_IMAGE_URL: images.imageUrl,
      CLUPILOT_CLOUD_IMAGE_SUMS_URL: images.sumsUrl,
      ...labProxmoxKeyringEnv(images.keyringUrl),
    }),
  );
  harness = await startStepHarness({ pipelines: { [onboard.name]: onboard } });
  db = harness.db;
  lab = await startLabCluster({
    nodes: 3,
    name: "walk",
    ceph: true,
    guests: [{ vmid: 100, type: "qemu", node: "pve1", storage: "ceph", ha: true }],
    apiAuthFailureDelayMs: 50,
    timeScale: 0.01,
  });
}, 60_000);
afterAll(async () => {
  await lab?.stop();
  await harness?.stop();
  await images?.stop();
});

describe("a lab cluster onboarded node by node, as a person does through Add host", () => {
  it("every node's onboarding succeeds, and the console then knows the three as one hyper-converged cluster", async () => {
    for (const node of lab.nodes) {
      const hostId = await insertLabHost(db, node);
      const run = await runToEnd(db, onboard, hostId);
      expect({ node: node.name, status: run.status, reason: run.failureReason }).toEqual({
        node: node.name,
        status: "succeeded",
        reason: null,
      });
      expect((await hostRow(db, hostId)).nodeName).toBe(node.name);
    }
    await refreshClusterGroups(db, { all: true });
    const groups = await loadClusterGroups(db);
    expect(groups).toHaveLength(1);
    const [group] = groups;
    expect(group).toMatchObject({ name: "walk", hyperConverged: true });
    expect(group!.nodes.map((n) => [n.name, n.hostId !== null])).toEqual([
      ["pve1", true],
      ["pve2", true],
      ["pve3", true],
    ]);
  });
});
