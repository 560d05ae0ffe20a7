/**
 * Issue 31, item 6: a host added with a subscription key is onboarded through the real worker
 * and a lab node, the key applied with pvesh and read back active, the node then on Proxmox's
 * enterprise repository with no-subscription disabled — and the key in no log line, event,
 * audit entry, failure or API answer. A re-onboarding changes nothing (the repository steps do
 * not undo each other); a key the shop refuses fails ApplySubscription with Proxmox's reason and
 * leaves the repositories as they were. No key: the other onboarding tests, unchanged.
 */
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { asc, eq } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { auditLog, events, runs, stepVisits } from "@/lib/db/schema";
import { auditedHostCreation } from "@/lib/hosts/create-host";
import { getHost } from "@/lib/hosts/get-host";
import { listHosts } from "@/lib/hosts/list-hosts";
import { reonboardHost } from "@/lib/hosts/reonboard-host";
import { ALREADY_IN_PLACE } from "@/lib/pipeline/already-in-place";
import { createOnboardHostPipeline } from "@/lib/steps/onboarding";
import { onboardingConfigFromEnv } from "@/lib/steps/onboarding/config";
import { startImageServer, type ImageServer, type LabNode } from "@/lab";
import { labExec, labExecOk } from "@/lab/test-helpers";
import { labProxmoxKeyring } from "@/lab/debian/apt-sources";
import {
  LAB_SHOP_INVALID_MESSAGE,
  LAB_SHOP_UNREACHABLE,
  LAB_SUBSCRIPTIONS,
} from "@/lab/pve/subscription";
import { retryRun } from "@/lib/runs/retry-run";
import { auditedHostEdit } from "@/lib/hosts/edit-host";
import { startStepHarness, type StepHarness } from "@/test/fixtures/step-harness";
import { runLogText, settled } from "@/test/runs";
import { snapshotLabFiles } from "@/test/lab-file-snapshot";
import { APPLY_SUBSCRIPTION } from "./apply-subscription";
import { desiredEnterpriseSources, desiredSources } from "./install-proxmox-repository";

const VALID = Object.keys(LAB_SUBSCRIPTIONS)[1]!;
const REFUSED = "pve4b-00000000ff";
const CORRECTED = Object.keys(LAB_SUBSCRIPTIONS)[0]!;
const NO_SUBSCRIPTION_URL = "http://download.proxmox.com/debian/pve";

let db: Database;
let harness: StepHarness;
let image: ImageServer;
let pipeline: ReturnType<typeof createOnboardHostPipeline>;

beforeAll(async () => {
  image = await startImageServer({ imageSizeBytes: 64 * 1024 });
  pipeline = createOnboardHostPipeline({
    ...onboardingConfigFromEnv({} as NodeJS.ProcessEnv),
    minMemoryMiB: 256,
    minFreeDiskGiB: 1,
    cloudImageUrl: image.imageUrl,
    cloudImageSumsUrl: image.sumsUrl,
    ...labProxmoxKeyring(image.keyringUrl),
    pollSeconds: 0.3,
    templateBuildDeadlineSeconds: 300,
    rebootDeadlineSeconds: 60,
  });
  harness = await startStepHarness({
    pipelines: { [pipeline.name]: pipeline },
    lab: { timeScale: 0.01 },
  });
  db = harness.db;
}, 120_000);
afterAll(async () => {
  await harness?.stop();
  await image?.stop();
});

async function addHost(node: LabNode, name: string, subscriptionKey: string) {
  return auditedHostCreation(
    db,
    { userId: null, name: "test" },
    {
      name,
      address: node.ssh.host,
      sshPort: node.ssh.port,
      apiPort: node.api.port,
      sshUser: node.ssh.username,
      authMethod: "password",
      password: node.ssh.password,
      subscriptionKey,
    },
  );
}

async function subscription(node: LabNode): Promise<Record<string, unknown>> {
  return JSON.parse(
    await labExecOk(node, "pvesh get /nodes/$(uname -n)/subscription --output-format json"),
  ) as Record<string, unknown>;
}

const sources = (node: LabNode, name: string) => {
  const file = path.join(node.root, "etc/apt/sources.list.d", name);
  return fs.existsSync(file) ? fs.readFileSync(file, "utf8") : null;
};

/** Everything the console stored or answers about the host and its runs, as one text. */
async function everythingStored(hostId: string, runIds: string[]): Promise<string> {
  const parts: unknown[] = [
    await getHost(db, hostId, { [pipeline.name]: pipeline }),
    await listHosts(db),
    await db.select().from(events).where(eq(events.hostId, hostId)),
    await db.select().from(auditLog),
  ];
  for (const runId of runIds) {
    parts.push(await runLogText(db, runId));
    parts.push(await db.select().from(runs).where(eq(runs.id, runId)));
    parts.push(await db.select().from(stepVisits).where(eq(stepVisits.runId, runId)));
  }
  return JSON.stringify(parts);
}

describe("ApplySubscription", () => {
  it("a host added with a key: subscription active, enterprise repository in use, no-subscription disabled; the key nowhere; a re-onboarding changes nothing", async () => {
    const node = await harness.lab();
    const { hostId, runId } = await addHost(node, "sub-1", VALID);
    const run = await settled(db, runId, 300_000);
    expect(run.failureReason ?? "").toBe("");
    expect(run).toMatchObject({ status: "succeeded", currentStep: "RegisterCapacity" });

    // Read back on the node, as Proxmox answers root.
    expect(await subscription(node)).toMatchObject({
      status: "active",
      key: VALID,
      productname: LAB_SUBSCRIPTIONS[VALID]!.productname,
    });
    expect(sources(node, "pve-enterprise.sources")).toBe(desiredEnterpriseSources());
    expect(sources(node, "pve-install-repo.sources")).toBe(
      `${desiredSources(NO_SUBSCRIPTION_URL)}Enabled: no\n`,
    );
    // apt uses the enterprise repository (it answers only an active subscription) and no longer
    // has an index of no-subscription.
    const lists = fs.readdirSync(path.join(node.root, "var/lib/apt/lists"));
    expect(lists).toContain("enterprise.proxmox.com_debian_pve_dists_trixie_InRelease");
    expect(lists).not.toContain("download.proxmox.com_debian_pve_dists_trixie_InRelease");
    const update = await labExec(node, "apt-get update --error-on=any");
    expect(update.code).toBe(0);
    expect(update.stdout).toContain("enterprise.proxmox.com/debian/pve trixie InRelease");
    expect(update.stdout).not.toContain("download.proxmox.com/debian/pve");

    const visits = await db
      .select()
      .from(stepVisits)
      .where(eq(stepVisits.runId, runId))
      .orderBy(asc(stepVisits.id));
    const applied = visits.filter((v) => v.step === APPLY_SUBSCRIPTION);
    expect(applied.at(-1)).toMatchObject({ outcome: "advance" });
    expect(applied.at(-1)!.detail).toMatch(
      /^subscription active \(Proxmox VE Standard Subscription 2 CPUs\/year, next due 2027-06-15\); enterprise repository in use, no-subscription disabled; apt-get update succeeded$/,
    );
    // The read-back printed the key: the log has it masked.
    const log = await runLogText(db, runId);
    expect(log).toContain(`pvesh get "/nodes/$node/subscription"`);
    expect(log).toContain(`"key":"(hidden)"`);
    expect(log).toContain(`pvesh set /nodes/'pve1'/subscription --key "$(cat)"`);

    const filesBefore = await snapshotLabFiles(node.root);
    const { runId: again } = await reonboardHost(db, { hostId, actor: "test" });
    const second = await settled(db, again, 120_000);
    expect(second.failureReason ?? "").toBe("");
    expect(second.status).toBe("succeeded");
    const filesAfter = await snapshotLabFiles(node.root);
    const changed = [...new Set([...filesBefore.keys(), ...filesAfter.keys()])].filter(
      (file) => filesBefore.get(file) !== filesAfter.get(file),
    );
    expect(changed).toEqual([]);
    const secondVisits = await db
      .select()
      .from(stepVisits)
      .where(eq(stepVisits.runId, again))
      .orderBy(asc(stepVisits.id));
    for (const step of ["InstallProxmoxRepository", APPLY_SUBSCRIPTION]) {
      const visit = secondVisits.find((v) => v.step === step);
      expect(visit?.detail ?? "", step).toMatch(new RegExp(`^${ALREADY_IN_PLACE}: `));
    }
    expect(secondVisits.find((v) => v.step === "InstallProxmoxRepository")!.detail).toContain(
      "active subscription: Proxmox enterprise repository configured",
    );

    const stored = await everythingStored(hostId, [runId, again]);
    expect(stored).toContain('"hasSubscriptionKey":true');
    expect(stored).not.toContain(VALID);
  }, 600_000);

  it("a key Proxmox refuses fails the step with Proxmox's status and message, repositories untouched; without network pvesh's error; a corrected key and Retry succeed", async () => {
    const node = await harness.lab();
    const { hostId, runId } = await addHost(node, "sub-2", REFUSED);
    const run = await settled(db, runId, 300_000);
    expect(run).toMatchObject({ status: "failed", failedStep: APPLY_SUBSCRIPTION });
    expect(run.failureReason).toBe(
      `Proxmox did not accept the subscription key: status invalid: ${LAB_SHOP_INVALID_MESSAGE}. ` +
        "The apt repositories were not changed (the host keeps no-subscription); check the key, " +
        "and that the host reaches shop.proxmox.com, then Retry",
    );
    expect(await subscription(node)).toMatchObject({ status: "invalid" });
    expect(sources(node, "pve-install-repo.sources")).toBe(desiredSources(NO_SUBSCRIPTION_URL));
    const enterprise = sources(node, "pve-enterprise.sources");
    expect(enterprise === null || /^Enabled: no$/m.test(enterprise)).toBe(true);
    const update = await labExec(node, "apt-get update --error-on=any");
    expect(update.code).toBe(0);
    expect(update.stdout).toContain("download.proxmox.com/debian/pve trixie InRelease");
    // Nothing after the failed step ran.
    const steps = (await db.select().from(stepVisits).where(eq(stepVisits.runId, runId))).map(
      (v) => v.step,
    );
    expect(steps).not.toContain("BuildVmTemplate");

    // Retry with the host cut off from the shop: pvesh set fails with its error, still nothing
    // changed in the repositories.
    node.setDebianFaults({ aptNetworkDown: true });
    try {
      await retryRun(db, { runId, actor: "test" });
      const retried = await settled(db, runId, 120_000);
      expect(retried).toMatchObject({ status: "failed", failedStep: APPLY_SUBSCRIPTION });
      expect(retried.failureReason).toBe(
        `pvesh set /nodes/pve1/subscription failed (exit 255): ${LAB_SHOP_UNREACHABLE}. The apt repositories were not changed`,
      );
    } finally {
      node.setDebianFaults({ aptNetworkDown: false });
    }
    expect(sources(node, "pve-install-repo.sources")).toBe(desiredSources(NO_SUBSCRIPTION_URL));
    expect(await everythingStored(hostId, [runId])).not.toContain(REFUSED);

    // The operator corrects the key (the host's edit, tested over SSH first) and retries: the
    // new key is applied, the host goes over to the enterprise repository.
    const edited = await auditedHostEdit(
      db,
      { userId: null, name: "test" },
      {
        hostId,
        edit: {
          address: node.ssh.host,
          sshPort: node.ssh.port,
          sshUser: node.ssh.username,
          authMethod: "keep",
          subscriptionKey: CORRECTED,
        },
      },
    );
    expect(edited.changes).toEqual(["subscription key replaced"]);
    await retryRun(db, { runId, actor: "test" });
    const fixed = await settled(db, runId, 300_000);
    expect(fixed.failureReason ?? "").toBe("");
    expect(fixed.status).toBe("succeeded");
    expect(await subscription(node)).toMatchObject({ status: "active", key: CORRECTED });
    expect(sources(node, "pve-enterprise.sources")).toBe(desiredEnterpriseSources());
    const stored = await everythingStored(hostId, [runId]);
    expect(stored).toContain("subscription key replaced");
    expect(stored).not.toContain(CORRECTED);
    expect(stored).not.toContain(REFUSED);
  }, 600_000);

  it("an enterprise repository that refuses the host: the apt sources are put back and the step fails with apt's reason", async () => {
    const node = await harness.lab();
    // Set before the run: only the enterprise repository refuses; no-subscription answers.
    node.setDebianFaults({ enterpriseRepositoryRefuses: true });
    const { hostId, runId } = await addHost(node, "sub-3", VALID);
    const run = await settled(db, runId, 300_000);
    expect(run).toMatchObject({ status: "failed", failedStep: APPLY_SUBSCRIPTION });
    expect(run.failureReason).toMatch(
      /^apt-get update with the enterprise repository \(https:\/\/enterprise\.proxmox\.com\/debian\/pve\) failed: .*401 {2}Unauthorized.*\. The apt sources were put back as they were$/,
    );
    // The subscription itself is active (Proxmox took the key); the repositories are as before,
    // no-subscription's index fetched again.
    expect(await subscription(node)).toMatchObject({ status: "active" });
    expect(sources(node, "pve-install-repo.sources")).toBe(desiredSources(NO_SUBSCRIPTION_URL));
    const enterprise = sources(node, "pve-enterprise.sources");
    expect(enterprise === null || /^Enabled: no$/m.test(enterprise)).toBe(true);
    expect(fs.readdirSync(path.join(node.root, "var/lib/apt/lists"))).toContain(
      "download.proxmox.com_debian_pve_dists_trixie_InRelease",
    );
    expect(await everythingStored(hostId, [runId])).not.toContain(VALID);

    // The repository lets the host in again: Retry switches.
    node.setDebianFaults({ enterpriseRepositoryRefuses: false });
    await retryRun(db, { runId, actor: "test" });
    const retried = await settled(db, runId, 300_000);
    expect(retried.failureReason ?? "").toBe("");
    expect(retried.status).toBe("succeeded");
    expect(sources(node, "pve-enterprise.sources")).toBe(desiredEnterpriseSources());
  }, 600_000);
});
