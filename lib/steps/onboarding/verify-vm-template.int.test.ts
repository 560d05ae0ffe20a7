import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDb, type Database } from "@/lib/db/client";
import { startLab, type LabNode } from "@/lab";
import { createTestDatabase } from "@/test/db";
import {
  apiTestPipeline,
  hostRow,
  insertLabHost,
  onNode,
  publishTemplates,
  runRow,
  runToEnd,
  settled,
  startTestRun,
} from "@/test/fixtures/api-steps";
import { waitFor } from "@/test/worker-process";
import { startWorker, type WorkerHandle } from "@/worker/runner";
import { connectHost } from "./connect-host";
import { createApiToken } from "./create-api-token";
import { verifyProxmoxApi } from "./verify-proxmox-api";
import { verifyVmTemplate } from "./verify-vm-template";

const prepare = apiTestPipeline("test-prepare-api", [
  connectHost,
  createApiToken,
  verifyProxmoxApi,
]);
const verify = apiTestPipeline("test-verify-vm-template", [verifyVmTemplate]);

let db: Database;
let worker: WorkerHandle;
let node: LabNode;
let hostId: string;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  const database = await createTestDatabase();
  const handle = createDb(database.url, 4);
  db = handle.db;
  worker = await startWorker({
    connectionString: database.url,
    pipelines: { [prepare.name]: prepare, [verify.name]: verify },
    concurrency: 2,
    pollIntervalMs: 200,
    engine: { backoffSeconds: () => 0.5, maxTransientErrors: 6 },
    periodicChecks: false,
    log: () => {},
  });
  node = await startLab({
    state: "onboarded",
    storage: "dir",
    timeScale: 0.01,
    pve: { templates: [9000], apiAuthFailureDelayMs: 50 },
  });
  cleanup = async () => {
    await worker.stop();
    await node.stop();
    await handle.pool.end();
    await database.drop();
  };
  hostId = await insertLabHost(db, node);
  // The seeded node's role predates the console's privilege list and its token's secret was
  // never the console's: CreateApiToken fixes the one and rotates the other.
  expect(await runToEnd(db, prepare, hostId)).toMatchObject({ status: "succeeded" });
});
afterAll(() => cleanup());

const qemuRequests = () => node.api.requests.filter((r) => r.path.includes("/qemu")).length;

describe("VerifyVmTemplate on an 'onboarded' node seeded with template 9000", () => {
  it("no published catalog → advances without asking Proxmox", async () => {
    const before = qemuRequests();
    const run = await runToEnd(db, verify, hostId);
    expect(run.status).toBe("succeeded");
    expect(qemuRequests()).toBe(before);
  });

  it("the catalog requires 9000, a template with a base- disk → passes, and counts as the host's template check", async () => {
    await publishTemplates(db, [9000]);
    const started = new Date();
    expect((await runToEnd(db, verify, hostId)).status).toBe("succeeded");
    const host = await hostRow(db, hostId);
    expect(host.templateCheckFailure).toBeNull();
    expect(host.templateCheckedAt!.getTime()).toBeGreaterThanOrEqual(started.getTime());
  });

  it("the VM list answering 502 is retried, never read as 'absent'; the template survives", async () => {
    node.api.faults.vmList502 = true;
    const runId = await startTestRun(db, verify, hostId);
    try {
      const erred = await waitFor("a failed attempt", async () => {
        const run = await runRow(db, runId);
        return run.errorCount >= 1 && run;
      });
      expect(erred.status).toBe("running");
      expect(erred.failureReason).toBeNull();
    } finally {
      node.api.faults.vmList502 = false;
    }
    expect(await settled(db, runId)).toMatchObject({ status: "succeeded" });
    expect(fs.existsSync(path.join(node.root, "etc/pve/qemu-server/9000.conf"))).toBe(true);
  });

  it("with 9001 also required and absent → fails naming 9001", async () => {
    await publishTemplates(db, [9001]);
    const run = await runToEnd(db, verify, hostId);
    expect(run).toMatchObject({ status: "failed", failedStep: "VerifyVmTemplate", errorCount: 0 });
    expect(run.failureReason).toContain("VMID 9001 does not exist");
    expect(run.failureReason).not.toContain("VMID 9000");
    expect((await hostRow(db, hostId)).templateCheckFailure).toBe(
      "templates missing: VMID 9001 does not exist",
    );
  });

  it("a plain VM 9001 (qm create, no template) does not pass: fails naming 9001", async () => {
    onNode(node, "qm", ["create", "9001", "--name", "plain", "--memory", "512"]);
    const run = await runToEnd(db, verify, hostId);
    expect(run).toMatchObject({ status: "failed", failedStep: "VerifyVmTemplate" });
    expect(run.failureReason).toContain('VM 9001 exists but is not a template (no "template: 1")');
  });

  it("'template: 1' on a disk that was never converted (vm-…) does not pass", async () => {
    const conf = path.join(node.root, "etc/pve/qemu-server/9001.conf");
    fs.appendFileSync(conf, "template: 1\nscsi0: local:9001/vm-9001-disk-0.raw,size=3G\n");
    const run = await runToEnd(db, verify, hostId);
    expect(run).toMatchObject({ status: "failed", failedStep: "VerifyVmTemplate" });
    expect(run.failureReason).toMatch(
      /VM 9001 has "template: 1" but its boot disk .*vm-9001-disk-0/,
    );
  });
});
