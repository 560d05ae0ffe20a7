/**
 * Issue 8, item 3: re-onboarding a healthy host changes nothing on it. The whole onboarding
 * order (createOnboardHostPipeline, every step) takes a fresh lab node to active with a
 * template the catalog requires; then a second run started by reonboardHost must leave the
 * node's state byte for byte as it was and end active, every step saying it found its work
 * in place.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { asc, eq } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { stepVisits } from "@/lib/db/schema";
import { readLogTail } from "@/lib/logs/read";
import { createOnboardHostPipeline } from "@/lib/steps/onboarding";
import { ALREADY_IN_PLACE } from "@/lib/pipeline/already-in-place";
import { onboardingConfigFromEnv } from "@/lib/steps/onboarding/config";
import { startImageServer, type ImageServer, type LabNode } from "@/lab";
import { labExecOk } from "@/lab/test-helpers";
import { labProxmoxKeyring } from "@/lab/debian/apt-sources";
import { publishTemplates } from "@/test/fixtures/api-steps";
import { startStepHarness, type StepHarness } from "@/test/fixtures/step-harness";
import { hostRow, settled } from "@/test/runs";
import { createHost } from "./create-host";
import { getHost } from "./get-host";
import { reonboardHost } from "./reonboard-host";
import { snapshotLabFiles } from "@/test/lab-file-snapshot";

let db: Database;
let harness: StepHarness;
let image: ImageServer;
let pipeline: ReturnType<typeof createOnboardHostPipeline>;

beforeAll(async () => {
  image = await startImageServer({ imageSizeBytes: 64 * 1024 });
  // Lab hosts on compressed time: small thresholds, the lab's image server, short polls.
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
  await harness.stop();
  await image.stop();
});

/** What the node answers about itself beyond files: reboots, API tokens, VMs. */
async function liveState(node: LabNode) {
  const client = { labExecOk };
  return {
    reboots: node.power.history.length,
    kernel: (await client.labExecOk(node, "uname -r")).trim(),
    tokens: await client.labExecOk(node, "pveum user token list clupilot@pve --output-format json"),
    vms: await client.labExecOk(node, "qm list"),
  };
}

describe("re-onboarding an active host", () => {
  it("re-onboarding an active lab host changes nothing on it (the lab's state before and after is identical) and ends active; every step's log says its work was already in place", async () => {
    await publishTemplates(db, [9000]);
    const node = await harness.lab();
    const { hostId, runId: firstRun } = await createHost(
      db,
      {
        name: "reonboard-1",
        address: node.ssh.host,
        sshPort: node.ssh.port,
        apiPort: node.api.port,
        sshUser: node.ssh.username,
        authMethod: "password",
        password: node.ssh.password,
      },
      "test",
    );
    const first = await settled(db, firstRun, 300_000);
    expect(first.failureReason ?? "").toBe("");
    expect((await getHost(db, hostId, { [pipeline.name]: pipeline }))!.state).toBe("active");
    expect(node.power.history).toHaveLength(1);

    const filesBefore = await snapshotLabFiles(node.root);
    const liveBefore = await liveState(node);
    const hostBefore = await hostRow(db, hostId);
    expect(liveBefore.vms).toMatch(/9000/);

    const { runId } = await reonboardHost(db, { hostId, actor: "test" });
    const again = await settled(db, runId, 120_000);
    expect(again.failureReason ?? "").toBe("");
    expect(again).toMatchObject({ status: "succeeded", currentStep: "RegisterCapacity" });
    expect((await getHost(db, hostId, { [pipeline.name]: pipeline }))!.state).toBe("active");

    const filesAfter = await snapshotLabFiles(node.root);
    const changed = [...new Set([...filesBefore.keys(), ...filesAfter.keys()])].filter(
      (file) => filesBefore.get(file) !== filesAfter.get(file),
    );
    expect(changed).toEqual([]);
    expect(await liveState(node)).toEqual(liveBefore);
    // The console's own record of the host is unchanged too (pins, token, capacity).
    const hostAfter = await hostRow(db, hostId);
    for (const field of [
      "hostKeySha256",
      "apiCertSha256",
      "apiTokenId",
      "apiTokenCredentialId",
      "nodeName",
      "capacityCores",
      "capacityMemoryMib",
      "capacityImageStorageGib",
      "capacityRegisteredAt",
    ] as const) {
      expect(hostAfter[field], field).toEqual(hostBefore[field]);
    }

    // Every step advanced on its first visit, saying it found its goal in place: on the
    // timeline (the visit's detail) and in the run log, in the same words.
    const visits = await db
      .select()
      .from(stepVisits)
      .where(eq(stepVisits.runId, runId))
      .orderBy(asc(stepVisits.id));
    expect(visits.map((v) => v.step)).toEqual(pipeline.steps.map((s) => s.name));
    for (const visit of visits) {
      expect(visit.outcome, visit.step).toBe("advance");
      expect(visit.detail, visit.step).toMatch(new RegExp(`^${ALREADY_IN_PLACE}: `));
    }
    const log = await readLogTail(db, runId, 2000);
    for (const step of pipeline.steps) {
      expect(
        log.some((l) => l.step === step.name && l.text.startsWith(`${ALREADY_IN_PLACE}: `)),
        step.name,
      ).toBe(true);
    }
  }, 480_000);
});
