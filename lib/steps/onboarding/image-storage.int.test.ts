import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "@/lib/db/client";
import type { LabNode, StartLabOptions } from "@/lab";
import { apiTestPipeline, insertLabHost, runToEnd } from "@/test/fixtures/api-steps";
import { startStepHarness, type StepHarness } from "@/test/fixtures/step-harness";
import { ALREADY_IN_PLACE } from "../../pipeline/already-in-place";
import { configureProxmox } from "./configure-proxmox";
import { connectHost } from "./connect-host";
import { createApiToken } from "./create-api-token";
import { registerCapacity } from "./register-capacity";
import { verifyProxmoxApi } from "./verify-proxmox-api";

// No BuildVmTemplate and no catalog: the host's configuration alone must leave room for VMs.
const configureAndCount = apiTestPipeline("test-image-storage", [
  connectHost,
  configureProxmox,
  createApiToken,
  verifyProxmoxApi,
  registerCapacity,
]);
const configureOnly = apiTestPipeline("test-image-storage-configure", [
  connectHost,
  configureProxmox,
]);

let db: Database;
let harness: StepHarness;

beforeAll(async () => {
  harness = await startStepHarness({
    pipelines: Object.fromEntries([configureAndCount, configureOnly].map((p) => [p.name, p])),
    lab: { timeScale: 0.01 },
  });
  db = harness.db;
});
afterAll(() => harness.stop());

const lab = (options?: StartLabOptions) => harness.lab(options);
const storageCfgPath = (node: LabNode) => path.join(node.root, "etc/pve/storage.cfg");
const storageCfg = (node: LabNode) => fs.readFileSync(storageCfgPath(node), "utf8");

describe("ConfigureProxmox ensures a storage for disk images (template.sh's ensure_image_storage)", () => {
  it("Proxmox over Debian ('local' without images): images is added to local's own list, and RegisterCapacity counts it with no catalog published", async () => {
    const node = await lab({ state: "proxmox", storage: "dir-no-images" });
    const hostId = await insertLabHost(db, node);
    const run = await runToEnd(db, configureAndCount, hostId);
    expect(run.failureReason ?? "").toBe("");
    expect(run.status).toBe("succeeded");
    expect(storageCfg(node)).toMatch(/^dir: local\n(\t.*\n)*\tcontent iso,vztmpl,backup,images\n/m);
  });

  it("a storage that already accepts images is left exactly as it was, and a second visit reads as already in place", async () => {
    const node = await lab({ state: "proxmox", storage: "lvm-thin" });
    const before = storageCfg(node);
    const hostId = await insertLabHost(db, node);
    const first = await runToEnd(db, configureOnly, hostId);
    expect(first.status).toBe("succeeded");
    expect(storageCfg(node)).toBe(before);
    const second = await runToEnd(db, configureOnly, hostId);
    expect(second.status).toBe("succeeded");
    const timeline = await db.query.stepVisits.findMany({
      where: (v, { eq }) => eq(v.runId, second.id),
    });
    const configured = timeline.find((v) => v.step === "ConfigureProxmox");
    expect(configured?.detail).toContain(`${ALREADY_IN_PLACE}: vmbr0 configured`);
    expect(configured?.detail).toContain("local-lvm accepts disk images");
  });

  it("no storage takes images and 'local' is disabled: the step fails with what to do by hand, storage.cfg untouched", async () => {
    const node = await lab({ state: "proxmox", storage: "dir-no-images" });
    const disabled = "dir: local\n\tpath /var/lib/vz\n\tcontent iso,vztmpl,backup\n\tdisable\n";
    fs.writeFileSync(storageCfgPath(node), disabled);
    const hostId = await insertLabHost(db, node);
    const run = await runToEnd(db, configureOnly, hostId);
    expect(run).toMatchObject({ status: "failed", failedStep: "ConfigureProxmox" });
    expect(run.failureReason).toMatch(/no storage accepts disk images.*pvesm set <storage>/);
    expect(storageCfg(node)).toBe(disabled);
  });
});
