import { CONSOLE_TOKEN_ID } from "@/lib/proxmox/console-identity";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "@/lib/db/client";
import { startLabCluster, type LabCluster } from "@/lab";
import { clusterCall } from "@/lab/pve/cluster/test-helpers";
import { apiTestPipeline, hostRow, insertLabHost, runToEnd } from "@/test/fixtures/api-steps";
import { startStepHarness, type StepHarness } from "@/test/fixtures/step-harness";
import { hostTokenSecret, runLogText } from "@/test/runs";
import { connectHost } from "./connect-host";
import { createApiToken } from "./create-api-token";
import { verifyProxmoxApi } from "./verify-proxmox-api";

const onboard = apiTestPipeline("test-cluster-token", [
  connectHost,
  createApiToken,
  verifyProxmoxApi,
]);

let db: Database;
let harness: StepHarness;
let lab: LabCluster;

beforeAll(async () => {
  harness = await startStepHarness({ pipelines: { [onboard.name]: onboard } });
  db = harness.db;
  lab = await startLabCluster({ nodes: 3, apiAuthFailureDelayMs: 50 });
}, 60_000);
afterAll(async () => {
  await lab?.stop();
  await harness?.stop();
});

const storedSecret = (hostId: string) => hostTokenSecret(db, hostId);

describe("onboarding every node of a Proxmox cluster, one after the other", () => {
  it("adopts the cluster's one console token on each member instead of rotating it, so every member onboarded before still opens its API", async () => {
    const tokenCfg = path.join(lab.nodes[0]!.root, "etc/pve/priv/token.cfg");
    const before = fs.readFileSync(tokenCfg, "utf8");
    const hostIds: string[] = [];
    for (const node of lab.nodes) {
      const hostId = await insertLabHost(db, node);
      hostIds.push(hostId);
      const run = await runToEnd(db, onboard, hostId);
      if (run.status !== "succeeded")
        throw new Error(`${run.failureReason}\n${await runLogText(db, run.id)}`);
      expect(run).toMatchObject({ status: "succeeded", currentStep: "VerifyProxmoxApi" });
      const log = await runLogText(db, run.id);
      expect(log).toContain(`adopted the secret of token ${CONSOLE_TOKEN_ID}`);
      expect(log).not.toContain(lab.token.secret);
      expect(await hostRow(db, hostId)).toMatchObject({
        nodeName: node.name,
        apiCertSha256: node.api.certSha256,
        apiTokenId: CONSOLE_TOKEN_ID,
      });
    }
    // The token was never replaced: its line is as the cluster had it.
    expect(fs.readFileSync(tokenCfg, "utf8")).toBe(before);
    for (const [i, node] of lab.nodes.entries()) {
      const secret = await storedSecret(hostIds[i]!);
      expect(secret).toBe(lab.token.secret);
      const answer = await clusterCall(node, "GET", "/version", { id: CONSOLE_TOKEN_ID, secret });
      expect(answer.status).toBe(200);
    }
  });
});
