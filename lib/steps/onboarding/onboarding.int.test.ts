import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { credentials, runs } from "@/lib/db/schema";
import { createHost } from "@/lib/hosts/create-host";
import { abortRun } from "@/lib/runs/abort-run";
import { retryRun } from "@/lib/runs/retry-run";
import { startRun } from "@/lib/runs/start-run";
import { ABORT_REASON } from "@/lib/pipeline/engine";
import { generateClientKey, type LabNode, type StartLabOptions } from "@/lab";
import { startStepHarness, type StepHarness } from "@/test/fixtures/step-harness";
import { waitFor } from "@/test/worker-process";
import { createOnboardHostPipeline } from ".";
import { checkOperatingSystem } from "./check-operating-system";
import { onboardingConfigFromEnv } from "./config";
import { connectHost } from "./connect-host";
import { hostRow, settled as settledRun } from "@/test/runs";

// The foundation's steps alone: what ConnectHost and CheckOperatingSystem do with a host; the
// whole chain is proven in debian-steps, api-steps and the end-to-end tests.
const config = onboardingConfigFromEnv({});
const onboardHostPipeline = createOnboardHostPipeline(config, {
  steps: [connectHost, checkOperatingSystem(config)],
});
const pipelines = { [onboardHostPipeline.name]: onboardHostPipeline };

let db: Database;
let harness: StepHarness;

beforeAll(async () => {
  harness = await startStepHarness({ pipelines });
  db = harness.db;
});
afterAll(() => harness.stop());

const lab = (options?: StartLabOptions) => harness.lab(options);

let counter = 0;
async function addHost(node: LabNode, auth: { password?: string; privateKey?: string } = {}) {
  return createHost(
    db,
    {
      name: `pve-${++counter}`,
      address: node.ssh.host,
      sshPort: node.ssh.port,
      apiPort: 8006,
      sshUser: node.ssh.username,
      authMethod: auth.privateKey ? "private_key" : "password",
      password: auth.privateKey ? undefined : (auth.password ?? node.ssh.password),
      privateKey: auth.privateKey,
    },
    "test",
  );
}

const settled = (runId: string, timeoutMs = 30_000) => settledRun(db, runId, timeoutMs);

const host = (hostId: string) => hostRow(db, hostId);

describe("onboarding against a lab host over real SSH", () => {
  it("a Debian 13 host passes ConnectHost and CheckOperatingSystem and pins its host key", async () => {
    const node = await lab();
    const { hostId, runId } = await addHost(node);
    const run = await settled(runId);
    expect(run).toMatchObject({ status: "succeeded", currentStep: "CheckOperatingSystem" });
    expect((await host(hostId)).hostKeySha256).toBe(node.ssh.hostKeySha256);
    // The stored credential is sealed: the password is nowhere in the row.
    const [credential] = await db.select().from(credentials);
    expect(credential!.sealed).not.toContain(node.ssh.password);
  });

  it("a private key works like a password", async () => {
    const key = generateClientKey();
    const node = await lab({ authorizedKeys: [key.publicKey] });
    const { runId } = await addHost(node, { privateKey: key.privateKey });
    expect((await settled(runId)).status).toBe("succeeded");
    expect(node.authAttempts.some((a) => a.method === "publickey" && a.accepted)).toBe(true);
  });

  it("Debian 12 is refused with a clear reason; fixing the host and Retry succeeds", async () => {
    const node = await lab({ os: "debian12" });
    const { runId } = await addHost(node);
    const failed = await settled(runId);
    expect(failed).toMatchObject({ status: "failed", failedStep: "CheckOperatingSystem" });
    expect(failed.failureReason).toBe(
      "found Debian GNU/Linux 12 (bookworm); CluPilot onboards Debian 13 (trixie) only — reinstall the host with Debian 13 and retry",
    );
    await node.setOs("debian13");
    await retryRun(db, { runId, actor: "test" });
    expect((await settled(runId)).status).toBe("succeeded");
  });

  it("a wrong password fails ConnectHost at once, without burning retries", async () => {
    const node = await lab();
    const { runId } = await addHost(node, { password: "not-the-password" });
    const failed = await settled(runId);
    expect(failed).toMatchObject({ status: "failed", failedStep: "ConnectHost", errorCount: 0 });
    expect(failed.failureReason).toMatch(/authentication/i);
    expect(failed.failureReason).not.toContain("not-the-password");
  });

  it("a changed host key is refused, naming both fingerprints, and no password is sent", async () => {
    const node = await lab();
    const { hostId, runId } = await addHost(node);
    expect((await settled(runId)).status).toBe("succeeded");
    const pinned = node.ssh.hostKeySha256;
    await node.rotateHostKey();
    const attemptsBefore = node.authAttempts.length;
    const again = await db.transaction((tx) =>
      startRun(tx, { pipeline: onboardHostPipeline, hostId, actor: "test" }),
    );
    const failed = await settled(again);
    expect(failed).toMatchObject({ status: "failed", failedStep: "ConnectHost" });
    expect(failed.failureReason).toContain(`pinned ${pinned}`);
    expect(failed.failureReason).toContain(`offered ${node.ssh.hostKeySha256}`);
    expect(node.authAttempts.length).toBe(attemptsBefore);
    expect((await host(hostId)).hostKeySha256).toBe(pinned);
  });

  it("an unreachable host is retried with backoff, then fails with the connection error", async () => {
    const node = await lab();
    node.faults.refuseConnections = true;
    const { runId } = await addHost(node);
    const failed = await settled(runId);
    expect(failed).toMatchObject({ status: "failed", failedStep: "ConnectHost" });
    expect(failed.failureReason).toMatch(/127\.0\.0\.1/);
  });

  it("Abort stops a run that is waiting on an unreachable host", async () => {
    const node = await lab();
    node.faults.refuseConnections = true;
    const slowWorkerRun = await addHost(node);
    await waitFor("the first failed attempt", async () => {
      const [run] = await db.select().from(runs).where(eq(runs.id, slowWorkerRun.runId));
      return run!.errorCount >= 1;
    });
    await abortRun(db, { runId: slowWorkerRun.runId, actor: "test" });
    const failed = await settled(slowWorkerRun.runId);
    expect(failed).toMatchObject({
      status: "failed",
      failureReason: ABORT_REASON,
      failedStep: "ConnectHost",
    });
  });
});
