import { CONSOLE_TOKEN_ID } from "@/lib/proxmox/console-identity";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { credentials, events, hosts, runs, stepVisits } from "@/lib/db/schema";
import { ensureConsoleKey } from "@/lib/host-access/console-key-store";
import { unseal } from "@/lib/secrets/seal";
import { ABORT_REASON } from "@/lib/pipeline/engine";
import { definePipeline, poll, type Step } from "@/lib/pipeline/step";
import { getRun } from "@/lib/runs/get-run";
import { retryRun } from "@/lib/runs/retry-run";
import { createOnboardHostPipeline } from "@/lib/steps/onboarding";
import { createApiToken } from "@/lib/steps/onboarding/create-api-token";
import { createDecommissionHostPipeline } from "@/lib/steps/onboarding/decommission";
import { connectHost } from "@/lib/steps/onboarding/connect-host";
import { createHostServices, type HostServices } from "@/lib/steps/onboarding/services";
import { activeHosts } from "@/lib/hosts/active-hosts";
import { generateClientKey, type LabNode } from "@/lab";
import { testConfig } from "@/test/fixtures/api-steps";
import { startStepHarness, type StepHarness } from "@/test/fixtures/step-harness";
import { hostRow, runRow, settled, startTestRun } from "@/test/runs";
import { waitFor } from "@/test/worker-process";
import { createHost } from "./create-host";
import { decommissionHost } from "./decommission-host";
import { deleteHost } from "./delete-host";
import { getHost } from "./get-host";
import { reonboardHost } from "./reonboard-host";
import { refusal } from "@/test/refusal";

// Onboarding up to the token: what decommissioning has to undo on the node.
const onboard = createOnboardHostPipeline(testConfig, { steps: [connectHost, createApiToken] });
const decommission = createDecommissionHostPipeline(testConfig);
// A run that keeps working until it is aborted, like a long onboarding step.
const endless: Step<HostServices> = {
  name: "LongStep",
  maxDuration: () => 600,
  visit: async () => poll(0.2, "working"),
};
const longRun = definePipeline<HostServices>({
  name: "test-long-run",
  steps: [endless],
  services: (run, db, resources) => createHostServices(db, run, testConfig, resources),
});
const pipelines = Object.fromEntries([onboard, decommission, longRun].map((p) => [p.name, p]));

let db: Database;
let harness: StepHarness;

beforeAll(async () => {
  harness = await startStepHarness({
    pipelines,
    lab: { timeScale: 0.01, state: "proxmox", storage: "dir" },
  });
  db = harness.db;
});
afterAll(() => harness.stop());

const tokenCfg = (node: LabNode) =>
  fs.readFileSync(path.join(node.root, "etc/pve/priv/token.cfg"), "utf8");
const authorizedKeys = (node: LabNode) => fs.readFileSync(node.authorizedKeysPath, "utf8");

let counter = 0;
/** A lab node onboarded up to its API token, logging in with the console's key (or a password). */
async function onboardedHost(node: LabNode, login: "console_key" | "password" = "console_key") {
  const key = await ensureConsoleKey(db);
  node.authorizeKey(key.publicKey);
  const { hostId, runId } = await createHost(
    db,
    {
      name: `decom-${++counter}`,
      address: node.ssh.host,
      sshPort: node.ssh.port,
      apiPort: node.api.port,
      sshUser: node.ssh.username,
      ...(login === "console_key"
        ? { authMethod: "console_key", consoleKeyId: key.id }
        : { authMethod: "password", password: node.ssh.password }),
    },
    "test",
  );
  const onboarding = await settled(db, runId);
  expect(onboarding.failureReason ?? "").toBe("");
  expect(tokenCfg(node)).toContain(`${CONSOLE_TOKEN_ID} `);
  return { hostId, onboardingRunId: runId, consoleKeyLine: key.publicKey };
}

/** Each decommission step's result line (its last visit's detail), by step. */
async function results(runId: string): Promise<Record<string, string>> {
  const visits = await db
    .select()
    .from(stepVisits)
    .where(eq(stepVisits.runId, runId))
    .orderBy(stepVisits.id);
  return Object.fromEntries(visits.map((v) => [v.step, v.detail ?? ""]));
}

describe.concurrent("decommissioning a host", () => {
  it("decommission removes token and key on the lab node (only the console's key line); the host is retired and its runs remain viewable", async () => {
    const operatorKey = generateClientKey("ops@laptop");
    const node = await harness.lab();
    node.authorizeKey(operatorKey.publicKey);
    const { hostId, onboardingRunId, consoleKeyLine } = await onboardedHost(node);
    const keysBefore = authorizedKeys(node);
    expect(keysBefore).toContain(consoleKeyLine);
    const apiSecretId = (await hostRow(db, hostId)).apiTokenCredentialId!;

    const { runId, abortsRunId } = await decommissionHost(db, { hostId, actor: "alice" });
    expect(abortsRunId).toBeNull();
    const run = await settled(db, runId);
    expect(run).toMatchObject({ status: "succeeded", currentStep: "MarkRetired" });

    expect(await results(runId)).toEqual({
      AbortActiveRun: "no run was running",
      LeaveCluster: "already in place: the host is in no cluster the console made",
      RemoveApiToken: `API token ${CONSOLE_TOKEN_ID} removed from pve1`,
      RemoveConsoleKey: `removed the console's key (1 line) from root's ~/.ssh/authorized_keys on pve1; other lines kept`,
      MarkRetired: expect.stringMatching(
        /retired; the console deleted its secrets for it \(SSH credential, API token secret\)/,
      ),
    });
    // On the node: the token is gone, the console's user stays; only the console's line left
    // authorized_keys, every other line is byte for byte what it was.
    expect(tokenCfg(node)).not.toContain(CONSOLE_TOKEN_ID);
    expect(fs.readFileSync(path.join(node.root, "etc/pve/user.cfg"), "utf8")).toContain(
      "clupilot@pve",
    );
    expect(authorizedKeys(node)).toBe(
      keysBefore
        .split("\n")
        .filter((line) => line !== consoleKeyLine)
        .join("\n"),
    );
    expect(authorizedKeys(node)).toContain(operatorKey.publicKey);

    // In the console: retired, the token's id and secret forgotten, history readable.
    const host = await hostRow(db, hostId);
    expect(host.retiredAt).toBeInstanceOf(Date);
    expect(host).toMatchObject({ apiTokenId: null, apiTokenCredentialId: null });
    expect(await db.select().from(credentials).where(eq(credentials.id, apiSecretId))).toEqual([]);
    const [sshCredential] = await db
      .select()
      .from(credentials)
      .where(eq(credentials.id, host.credentialId));
    expect(unseal(sshCredential!.sealed)).toBe("{}");
    expect((await getHost(db, hostId, pipelines))!.state).toBe("retired");
    const history = await getRun(db, onboardingRunId, pipelines);
    expect(history).toMatchObject({ status: "succeeded", hostId });
    expect(history!.timeline.map((s) => s.state)).toEqual(["done", "done"]);
    expect(history!.logLines).toBeGreaterThan(0);

    // Retired: no new runs, no template checks, no second decommission.
    expect((await refusal(reonboardHost(db, { hostId, actor: "alice" }))).message).toMatch(
      /is retired and gets no new runs/,
    );
    expect((await refusal(decommissionHost(db, { hostId, actor: "alice" }))).message).toMatch(
      /already retired/,
    );
    expect((await activeHosts(db)).map((h) => h.id)).not.toContain(hostId);

    // Delete: the host, its runs, logs, events and secrets go; the node is not touched.
    const commands = node.commands.length;
    expect(await deleteHost(db, { hostId, actor: "admin" })).toMatchObject({
      hostId,
      name: host.name,
      runs: 2,
    });
    expect(await db.select().from(hosts).where(eq(hosts.id, hostId))).toEqual([]);
    expect(await db.select().from(runs).where(eq(runs.hostId, hostId))).toEqual([]);
    expect(await db.select().from(events).where(eq(events.hostId, hostId))).toEqual([]);
    expect(
      await db.select().from(credentials).where(eq(credentials.id, host.credentialId)),
    ).toEqual([]);
    expect(node.commands.length).toBe(commands);
  });

  it("decommission with the host unreachable: each result says what was NOT removed, never 'removed'; the host is still retired", async () => {
    const node = await harness.lab();
    const { hostId, consoleKeyLine } = await onboardedHost(node);
    node.faults.refuseConnections = true;

    const { runId } = await decommissionHost(db, { hostId, actor: "alice" });
    const run = await settled(db, runId, 90_000);
    expect(run.status).toBe("succeeded");
    const found = await results(runId);
    expect(found.RemoveApiToken).toMatch(
      new RegExp(
        `^host unreachable: API token ${CONSOLE_TOKEN_ID.replace("!", "!")} NOT removed from pve1; run "pveum user token remove 'clupilot@pve' 'console'" on pve1 as root`,
      ),
    );
    expect(found.RemoveConsoleKey).toMatch(/^host unreachable: the console's key was NOT removed/);
    expect(Object.values(found).join("\n")).not.toMatch(/^API token .* removed|^removed/m);
    // Nothing changed on the node; the console keeps the token id so the page says what is left.
    expect(tokenCfg(node)).toContain(`${CONSOLE_TOKEN_ID} `);
    expect(authorizedKeys(node)).toContain(consoleKeyLine);
    expect(await hostRow(db, hostId)).toMatchObject({ apiTokenId: CONSOLE_TOKEN_ID });
    expect((await hostRow(db, hostId)).retiredAt).toBeInstanceOf(Date);
  }, 120_000);

  it("a token list that cannot be read (pve-cluster down) is reported as not removed, and the token stays", async () => {
    const node = await harness.lab();
    const { hostId } = await onboardedHost(node, "password");
    node.pve.setToolFaults({ clusterFsDown: true });

    const { runId } = await decommissionHost(db, { hostId, actor: "alice" });
    expect((await settled(db, runId)).status).toBe("succeeded");
    const found = await results(runId);
    expect(found.RemoveApiToken).toMatch(
      /^could not read the user list on pve1 \(exit 255: ipcc_send_rec\[1\] failed: Connection refused\): API token clupilot@pve!console NOT removed/,
    );
    expect(found.RemoveConsoleKey).toMatch(/^removed the console's key/);
    expect(tokenCfg(node)).toContain(`${CONSOLE_TOKEN_ID} `);
    // Retired all the same, and the console no longer holds the host's root password.
    const host = await hostRow(db, hostId);
    expect(host.retiredAt).toBeInstanceOf(Date);
    const [sshCredential] = await db
      .select()
      .from(credentials)
      .where(eq(credentials.id, host.credentialId));
    expect(sshCredential!.kind).toBe("password");
    expect(unseal(sshCredential!.sealed)).toBe("{}");
  });

  it("a running onboarding is aborted first (its step cleans up), then the host is decommissioned", async () => {
    const node = await harness.lab();
    const { hostId } = await onboardedHost(node);
    const busyRunId = await startTestRun(db, longRun, hostId);
    await waitFor("the long run to work", async () => (await runRow(db, busyRunId)).stepVisit >= 1);

    const { runId, abortsRunId } = await decommissionHost(db, { hostId, actor: "alice" });
    expect(abortsRunId).toBe(busyRunId);
    expect((await getHost(db, hostId, pipelines))!.state).toBe("decommissioning");
    expect((await settled(db, runId)).status).toBe("succeeded");
    expect(await runRow(db, busyRunId)).toMatchObject({
      status: "failed",
      failureReason: ABORT_REASON,
    });
    expect((await results(runId)).AbortActiveRun).toBe(`run ${busyRunId} aborted and stopped`);
    expect((await getHost(db, hostId, pipelines))!.state).toBe("retired");
    // The aborted run cannot be retried on the retired host either.
    expect((await refusal(retryRun(db, { runId: busyRunId, actor: "alice" }))).message).toMatch(
      /is retired and gets no new runs/,
    );
    expect((await runRow(db, busyRunId)).status).toBe("failed");
  });

  it("delete is refused for a host that is not retired, and nothing is deleted", async () => {
    const node = await harness.lab();
    const { hostId, onboardingRunId } = await onboardedHost(node);
    const error = await refusal(deleteHost(db, { hostId, actor: "admin" }));
    expect(error.code).toBe("conflict");
    expect(error.message).toMatch(
      /not retired; only a retired host can be deleted. Decommission it first/,
    );
    expect(await hostRow(db, hostId)).toBeDefined();
    expect((await runRow(db, onboardingRunId)).id).toBe(onboardingRunId);
  });
});
