import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";

import { afterEach, describe, expect, it } from "vitest";

import { SshConnectError } from "@/lib/ssh/errors";

import { isProcessAlive, startLab, waitUntil, type LabNode } from "../index";
import { labExecOk, labSession } from "../test-helpers";
import { writeNextKernel } from "./lab-state";
import { PVE_KERNEL } from "./catalog";

// A short handshake timeout: the polls below wait for SSH to refuse while the node goes down.
const READY_TIMEOUT_MS = 3000;

const connect = (lab: LabNode) => labSession(lab, { readyTimeoutMs: READY_TIMEOUT_MS });

const run = (lab: LabNode, command: string, pinnedHostKey: string | null = null) =>
  labExecOk(lab, command, { pinnedHostKey, readyTimeoutMs: READY_TIMEOUT_MS, timeoutMs: 20_000 });

async function connectError(lab: LabNode): Promise<SshConnectError | null> {
  try {
    (await connect(lab)).close();
    return null;
  } catch (error) {
    if (error instanceof SshConnectError) return error;
    throw error;
  }
}

describe("lab reboot semantics over real SSH", () => {
  let lab: LabNode | undefined;
  afterEach(async () => {
    await lab?.stop();
    lab = undefined;
  });

  it("reboot: SSH refused while down, back on the same port with the same host key, next kernel running, processes gone", async () => {
    lab = await startLab({ timeScale: 0.01, rebootMs: 150_000 }); // 1.5 s down
    const node = lab;
    const port = node.ssh.port;
    const hostKey = node.ssh.hostKeySha256;
    writeNextKernel(node.root, PVE_KERNEL);
    await writeFile(path.join(node.root, "etc/hostname"), "pve1\n");
    await run(node, "hostname transient-name");
    expect((await run(node, "hostname")).trim()).toBe("transient-name");

    await run(
      node,
      "nohup setsid sleep 600 >/dev/null 2>&1 < /dev/null & echo $! > /tmp/sleep.pid",
    );
    const sleeper = Number((await readFile(path.join(node.root, "tmp/sleep.pid"), "utf8")).trim());
    expect(isProcessAlive(sleeper)).toBe(true);
    expect((await run(node, "uname -r")).trim()).toBe("6.12.57+deb13-amd64");

    const session = await connect(node);
    const result = await session.exec("reboot");
    expect(result.code).toBe(0);
    session.close();

    await waitUntil(async () => (await connectError(node))?.reason === "refused", {
      timeoutMs: 3000,
      what: "SSH to refuse connections",
    });
    expect(node.power.state === "down" || node.power.state === "booting").toBe(true);
    await waitUntil(() => !isProcessAlive(sleeper), { what: "the nohup setsid sleep to die" });

    await node.power.waitUntilUp(10_000);
    expect(node.ssh.port).toBe(port);
    expect(node.ssh.hostKeySha256).toBe(hostKey);
    // Pinned to the key from before the reboot: a changed key would throw here.
    expect((await run(node, "uname -r", hostKey)).trim()).toBe("6.17.2-1-pve");
    expect((await run(node, "hostname", hostKey)).trim()).toBe("pve1");
    expect(isProcessAlive(sleeper)).toBe(false);
    expect(node.power.history).toHaveLength(1);
    expect(node.power.history[0]).toMatchObject({
      action: "reboot",
      kernelBefore: "6.12.57+deb13-amd64",
      kernelAfter: "6.17.2-1-pve",
    });
  });

  it("systemctl reboot and shutdown -r now reboot too; reboot fault rebootTakesMs sets the downtime", async () => {
    lab = await startLab({ timeScale: 0.01 });
    const node = lab;
    node.setDebianFaults({ rebootTakesMs: 1200 });
    await run(node, "systemctl reboot");
    await waitUntil(() => node.power.state === "down" || node.power.state === "booting", {
      what: "down",
    });
    const downAt = Date.now();
    await node.power.waitUntilUp(10_000);
    expect(Date.now() - downAt).toBeGreaterThanOrEqual(1000);

    node.setDebianFaults({ rebootTakesMs: 100 });
    await run(node, "shutdown -r now");
    await waitUntil(() => node.power.history.length === 2 && node.power.state === "up", {
      timeoutMs: 5000,
      what: "second reboot",
    });
    expect(node.power.history.map((r) => r.action)).toEqual(["reboot", "reboot"]);
  });

  it("fault rebootNeverReturns: the host stays unreachable until powered on", async () => {
    lab = await startLab({ timeScale: 0.01, rebootMs: 1000 });
    const node = lab;
    await node.switches.apply({ "reboot.neverReturns": true });
    await run(node, "reboot");
    await waitUntil(() => node.power.state === "down", { what: "down" });
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(node.power.state).toBe("down");
    expect((await connectError(node))?.reason).toBe("refused");
    node.setDebianFaults({ rebootNeverReturns: false });
    await node.switches.run("reboot.powerOn");
    expect(node.power.state).toBe("up");
    expect((await run(node, "echo up")).trim()).toBe("up");
  });

  it("stop() while a boot is under way waits for it: nothing is written into the removed root", async () => {
    lab = await startLab({ timeScale: 0.01, rebootMs: 1000 });
    const node = lab;
    await run(node, "poweroff");
    await waitUntil(() => node.power.state === "down", { what: "down" });
    // Hold the boot inside the target's start (the API powered on, SSH not yet restarted): the
    // moment a lab teardown once caught, whose rm then met the boot's `.lab/tool-server`.
    let inStart!: () => void;
    const reachedStart = new Promise<void>((resolve) => (inStart = resolve));
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const powerOnApi = node.api.powerOn.bind(node.api);
    node.api.powerOn = async () => {
      inStart();
      await gate;
      await powerOnApi();
    };
    const booted = node.power.powerOn();
    await reachedStart;
    const stopped = node.stop();
    lab = undefined;
    release();
    await stopped;
    await booted;
    expect(existsSync(node.root)).toBe(false);
  });

  it("systemctl: is-active follows installed packages, restart of networking succeeds, unknown units fail", async () => {
    lab = await startLab({ timeScale: 0 });
    const out = await run(
      lab,
      "systemctl is-active ssh; systemctl is-active pveproxy; echo rc=$?; systemctl restart networking && echo restarted; systemctl restart nope.service; echo rc=$?",
    );
    expect(out).toBe("active\ninactive\nrc=3\nrestarted\nrc=5\n");
  });
});
