import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "@/lib/db/client";
import { readLogTail } from "@/lib/logs/read";
import { definePipeline, type Pipeline, type Step } from "@/lib/pipeline/step";
import { retryRun } from "@/lib/runs/retry-run";
import { waitUntil, type LabNode } from "@/lab";
import { markInstalled } from "@/lab/debian/dpkg-status";
import { createPmxcfs } from "@/lab/pve/seed";
import { labExec, labExecOk } from "@/lab/test-helpers";
import { startStepHarness, type StepHarness } from "@/test/fixtures/step-harness";
import { settled as settledRun, startTestRun } from "@/test/runs";
import { onboardingConfigFromEnv } from "./config";
import {
  APPLY_NETWORK,
  bridgeInterfaces,
  configureProxmoxStep,
  prepareNetworkCommand,
  ROLLBACK_UNIT,
} from "./configure-proxmox";
import { connectHost } from "./connect-host";
import { createLabHost } from "@/test/lab-host";
import { createHostServices, type HostServices } from "./services";

/**
 * ConfigureProxmox's dead man's switch against a lab host (issue 17, item 1): the host schedules
 * its own rollback with `systemd-run --on-active`, the console applies vmbr0, reconnects over a
 * NEW SSH connection and only then cancels the timer. With the lab's broken bridge
 * (`debian.bridgeDropsAddress`) the change cuts the host off: the console cannot reconnect, the
 * host's timer puts the old network back by itself, and the step fails saying so and what the
 * host looks like now.
 */

let db: Database;
let harness: StepHarness;
const pipelines: Record<string, Pipeline<HostServices>> = {};
const config = onboardingConfigFromEnv({} as NodeJS.ProcessEnv);

function pipeline(name: string, steps: Step<HostServices>[]) {
  const p = definePipeline<HostServices>({
    name,
    steps,
    services: (run, database, resources) => createHostServices(database, run, config, resources),
  });
  pipelines[name] = p;
  return p;
}

// Long enough for the lab's tools on a busy machine, short enough to wait out in a test.
const ROLLBACK_SECONDS = 15;
const network = pipeline("test-network-rollback", [
  connectHost,
  configureProxmoxStep({ rollbackSeconds: ROLLBACK_SECONDS }),
]);

beforeAll(async () => {
  harness = await startStepHarness({
    pipelines,
    worker: { periodicChecks: false },
    lab: { timeScale: 0.01 },
  });
  db = harness.db;
});
afterAll(() => harness?.stop());

let counter = 0;
/** A Debian host with ifupdown2 and a storage that takes images (this file is about vmbr0). */
async function debianHost(): Promise<{ node: LabNode; hostId: string }> {
  const node = await harness.lab();
  markInstalled(node.root, [{ name: "ifupdown2", version: "3.3.0-1+pmx10", architecture: "all" }]);
  createPmxcfs(node.root, { node: "pve1", storage: "dir" });
  const { hostId, runId } = await createLabHost(db, node, `rollback-${++counter}`);
  await settledRun(db, runId);
  return { node, hostId };
}

const read = (node: LabNode, file: string) => readFile(path.join(node.root, file), "utf8");
/**
 * What a visit cut short leaves on the host: the change prepared and its rollback timer armed
 * (with the step's own commands), and — with `apply` — the change applied but never confirmed.
 */
async function interruptedVisit(node: LabNode, apply: boolean, seconds: number): Promise<void> {
  const interfaces = await read(node, "etc/network/interfaces");
  const plan = bridgeInterfaces(interfaces, "eno1");
  if (!("content" in plan)) throw new Error(plan.refuse);
  await labExecOk(
    node,
    prepareNetworkCommand(createHash("sha256").update(interfaces).digest("hex"), seconds),
    { stdin: plan.content },
  );
  if (!apply) return;
  await labExecOk(node, APPLY_NETWORK);
  await waitUntil(
    () => existsSync(path.join(node.root, "var/lib/clupilot/jobs/configure-network/result")),
    {
      timeoutMs: 20_000,
      what: "the apply's result",
    },
  );
}

const logOf = async (runId: string) =>
  (await readLogTail(db, runId, 5000)).map((l) => l.text).join("\n");

describe.concurrent("ConfigureProxmox changes the network under a rollback timer", () => {
  it("normal path: the timer is set before ifreload and cancelled after a new SSH connection finds vmbr0 live; the log shows both", async () => {
    const { node, hostId } = await debianHost();
    const connectionsBefore = node.authAttempts.filter((a) => a.accepted).length;
    const runId = await startTestRun(db, network, hostId);
    const run = await settledRun(db, runId, 120_000);
    expect(run.failureReason ?? "").toBe("");
    expect(run.status).toBe("succeeded");

    expect(await read(node, ".lab/network-applied")).toContain("iface vmbr0 inet static");
    expect(await labExecOk(node, "hostname -I")).toBe("192.0.2.10 \n");
    // Cancelled, not fired: no unit left, and its service never ran.
    expect(
      await labExec(node, `systemctl is-active ${ROLLBACK_UNIT}.timer ${ROLLBACK_UNIT}.service`),
    ).toMatchObject({ code: 3, stdout: "inactive\ninactive\n" });
    expect(existsSync(path.join(node.root, `.lab/transient/${ROLLBACK_UNIT}.journal`))).toBe(false);
    // The confirmation came over a connection opened after the apply (a login of its own).
    expect(node.authAttempts.filter((a) => a.accepted).length).toBeGreaterThan(
      connectionsBefore + 1,
    );

    const log = await logOf(runId);
    const set = log.indexOf(`rollback timer ${ROLLBACK_UNIT}.timer set: in ${ROLLBACK_SECONDS} s`);
    const applying = log.indexOf("applying vmbr0; confirming over a new SSH connection");
    const cancelled = log.indexOf(`cancelled: rollback timer ${ROLLBACK_UNIT}.timer stopped`);
    expect(set).toBeGreaterThan(-1);
    expect(log).toContain(`Running timer as unit: ${ROLLBACK_UNIT}.timer`);
    expect(applying).toBeGreaterThan(set);
    expect(cancelled).toBeGreaterThan(applying);
  });

  it("cut-off network: the console cannot reconnect, the host takes vmbr0 back by itself, the step fails with the reason and the host's network now, and the host answers with its old config", async () => {
    const { node, hostId } = await debianHost();
    const interfacesBefore = await read(node, "etc/network/interfaces");
    const appliedBefore = await read(node, ".lab/network-applied");
    node.setDebianFaults({ bridgeDropsAddress: true });

    const runId = await startTestRun(db, network, hostId);
    const failed = await settledRun(db, runId, 180_000);
    expect(failed).toMatchObject({ status: "failed", failedStep: "ConfigureProxmox" });
    expect(failed.failureReason).toMatch(
      new RegExp(
        `^the console could not open a new SSH connection to the host within ${ROLLBACK_SECONDS} s of applying vmbr0 \\(the change cut it off\\), so the host put its previous network back by itself \\(\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ ifreload-exit=0\\): now default route via eno1 \\(gateway 192\\.0\\.2\\.1\\); eno1 192\\.0\\.2\\.10/24; vmbr0 no address — check that vmbr0 can carry the address on this network .*, then Retry$`,
      ),
    );
    expect(failed.failureReason).not.toContain("\n");

    // The host is back as it was, by its own timer (its service ran and ended), and answers.
    expect(await read(node, "etc/network/interfaces")).toBe(interfacesBefore);
    expect(await read(node, ".lab/network-applied")).toBe(appliedBefore);
    expect(await read(node, `.lab/transient/${ROLLBACK_UNIT}.journal`)).toMatch(
      new RegExp(
        `Started ${ROLLBACK_UNIT}\\.service\\.\\n.*${ROLLBACK_UNIT}\\.service: exited, status=0\\n$`,
      ),
    );
    expect(await labExecOk(node, "hostname -I")).toBe("192.0.2.10 \n");
    const log = await logOf(runId);
    expect(log).toContain(`rollback timer ${ROLLBACK_UNIT}.timer set: in ${ROLLBACK_SECONDS} s`);
    expect(log).toContain(
      `no new SSH connection to the host within ${ROLLBACK_SECONDS} s of applying vmbr0; waiting for the host to take the change back by itself`,
    );
    expect(log).not.toContain("cancelled: rollback timer");

    // The bridge fixed, a Retry applies it under a new timer and confirms it.
    node.setDebianFaults({ bridgeDropsAddress: false });
    await retryRun(db, { runId, actor: "test" });
    const retried = await settledRun(db, runId, 120_000);
    expect(retried.failureReason ?? "").toBe("");
    expect(retried.status).toBe("succeeded");
    expect(await read(node, ".lab/network-applied")).toContain("iface vmbr0 inet static");
  });

  it("re-visit after an apply whose visit was cut short: the pending timer is found, vmbr0 is confirmed over a new connection and the timer cancelled", async () => {
    const { node, hostId } = await debianHost();
    await interruptedVisit(node, true, 90);
    expect(await labExecOk(node, `systemctl is-active ${ROLLBACK_UNIT}.timer`)).toBe("active\n");

    const runId = await startTestRun(db, network, hostId);
    const run = await settledRun(db, runId, 120_000);
    expect(run.failureReason ?? "").toBe("");
    expect(run.status).toBe("succeeded");
    const log = await logOf(runId);
    expect(log).toContain(
      "an earlier visit applied vmbr0 and was cut short before confirming it; the rollback timer is still pending, so confirming over a new SSH connection",
    );
    expect(log).toContain(`cancelled: rollback timer ${ROLLBACK_UNIT}.timer stopped`);
    // Not rolled back, never re-applied: one ifreload (the interrupted visit's) kept.
    expect(existsSync(path.join(node.root, `.lab/transient/${ROLLBACK_UNIT}.journal`))).toBe(false);
    expect(await read(node, ".lab/network-applied")).toContain("iface vmbr0 inet static");
    expect(log).not.toContain("clupilot-apply-network");
  });

  it("re-visit while a timer from a visit cut short before its apply is pending: the step waits for the host's rollback, then applies again under a new timer", async () => {
    const { node, hostId } = await debianHost();
    await interruptedVisit(node, false, ROLLBACK_SECONDS);

    const runId = await startTestRun(db, network, hostId);
    const run = await settledRun(db, runId, 180_000);
    expect(run.failureReason ?? "").toBe("");
    expect(run.status).toBe("succeeded");
    const log = await logOf(runId);
    const waiting = log.indexOf("an earlier visit's rollback timer is still pending (due in ");
    const rolledBack = log.indexOf("the host put its previous network back by itself (");
    const cancelled = log.indexOf(`cancelled: rollback timer ${ROLLBACK_UNIT}.timer stopped`);
    expect(waiting).toBeGreaterThan(-1);
    expect(rolledBack).toBeGreaterThan(waiting);
    expect(cancelled).toBeGreaterThan(rolledBack);
    // The old timer ran once (it put back the unchanged file); the new one was cancelled.
    const journal = await read(node, `.lab/transient/${ROLLBACK_UNIT}.journal`);
    expect(journal.match(/Started /g)).toHaveLength(1);
    expect(await read(node, ".lab/network-applied")).toContain("iface vmbr0 inet static");
  });
});
