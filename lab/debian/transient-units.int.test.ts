import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { isProcessAlive, startLab, waitUntil, type LabNode } from "../index";
import { labExec, labExecOk, labSession } from "../test-helpers";
import { markInstalled } from "./dpkg-status";

const BRIDGE = `auto lo
iface lo inet loopback

iface eno1 inet manual

auto vmbr0
iface vmbr0 inet static
\taddress 192.0.2.10/24
\tgateway 192.0.2.1
\tbridge-ports eno1
\tbridge-stp off
\tbridge-fd 0
`;

describe("lab systemd-run timers and a bridge that cuts the host off", () => {
  let lab: LabNode;
  beforeAll(async () => {
    lab = await startLab({ timeScale: 0 });
    markInstalled(lab.root, [{ name: "ifupdown2", version: "3.3.0-1+pmx10", architecture: "all" }]);
  });
  afterAll(async () => {
    await lab?.stop();
  });

  it("a timer runs its command after its time as <unit>.service, then is gone", async () => {
    const set = await labExec(
      lab,
      `systemd-run --unit=lab-fires --on-active=8s --collect sh -c 'echo "fired $1" > /tmp/fired' sh 'a b'`,
    );
    expect(set.code, set.stderr).toBe(0);
    expect(set.stderr).toBe(
      "Running timer as unit: lab-fires.timer\nWill run service as unit: lab-fires.service\n",
    );
    expect(await labExecOk(lab, "systemctl is-active lab-fires.timer")).toBe("active\n");
    expect(await labExecOk(lab, "systemctl list-timers --no-legend 'lab-*'")).toMatch(
      /^\w{3} \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC +\ds +- +- +lab-fires\.timer lab-fires\.service\n$/,
    );
    const again = await labExec(lab, "systemd-run --unit=lab-fires --on-active=1 true");
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("Unit lab-fires.timer was already loaded");
    await waitUntil(
      async () => (await labExec(lab, "systemctl is-active lab-fires.timer")).code === 3,
      { timeoutMs: 20_000, what: "lab-fires.timer to fire" },
    );
    expect(await readFile(path.join(lab.root, "tmp/fired"), "utf8")).toBe("fired a b\n");
    expect(await readFile(path.join(lab.root, ".lab/transient/lab-fires.journal"), "utf8")).toMatch(
      /Started lab-fires\.service\.\n.*lab-fires\.service: exited, status=0\n$/,
    );
  });

  it("systemctl stop cancels a waiting timer: its command never runs", async () => {
    await labExecOk(lab, "systemd-run --unit=lab-cancel --on-active=6s touch /tmp/never");
    expect(await labExecOk(lab, "systemctl status lab-cancel.timer")).toMatch(
      /Active: active \(waiting\)[\s\S]*Trigger: .*; [1-6]s left/,
    );
    expect((await labExec(lab, "systemctl stop lab-cancel.timer")).code).toBe(0);
    const state = await labExec(lab, "systemctl is-active lab-cancel.timer lab-cancel.service");
    expect(state).toMatchObject({ code: 3, stdout: "inactive\ninactive\n" });
    expect(await labExec(lab, "systemctl stop lab-cancel.timer")).toMatchObject({
      code: 5,
      stderr: "Failed to stop lab-cancel.timer: Unit lab-cancel.timer not loaded.\n",
    });
    await new Promise((resolve) => setTimeout(resolve, 6500));
    expect((await labExec(lab, "test -e /tmp/never")).code).toBe(1);
  });

  it("with bridgeDropsAddress, ifreload applies vmbr0 without its address and new SSH connections are refused until an address is back", async () => {
    const before = await readFile(path.join(lab.root, "etc/network/interfaces"), "utf8");
    // Through the control switch, as the lab page flips it.
    await lab.switches.apply({ "debian.bridgeDropsAddress": true });
    expect(lab.debianFaults.bridgeDropsAddress).toBe(true);
    await writeFile(path.join(lab.root, "etc/network/interfaces"), BRIDGE);
    const session = await labSession(lab);
    try {
      const r = await session.exec("ifreload -a; echo rc=$?", { timeoutMs: 30_000 });
      expect(r.stdout).toBe("rc=0\n");
      await expect(labExec(lab, "true", { readyTimeoutMs: 5_000 })).rejects.toThrow();
      // The host itself shows the bridge without the address (and, asked for IPv4 only, not at all).
      const addr = await session.exec("ip -j addr show vmbr0", { timeoutMs: 30_000 });
      expect(JSON.parse(addr.stdout)).toEqual([
        expect.objectContaining({ ifname: "vmbr0", addr_info: [] }),
      ]);
      const inet = await session.exec("ip -j -4 addr show vmbr0", { timeoutMs: 30_000 });
      expect(JSON.parse(inet.stdout)).toEqual([]);
      await writeFile(path.join(lab.root, "etc/network/interfaces"), before);
      expect((await session.exec("ifreload -a", { timeoutMs: 30_000 })).code).toBe(0);
    } finally {
      session.close();
      lab.setDebianFaults({ bridgeDropsAddress: false });
    }
    expect(await labExecOk(lab, "hostname -I")).toBe("192.0.2.10 \n");
  });

  it("a waiting timer dies with the host, as a transient unit does: stopping the lab leaves no process of it", async () => {
    const other = await startLab({ timeScale: 0 });
    let pid = 0;
    try {
      await labExecOk(other, "systemd-run --unit=lab-dies --on-active=300 true");
      pid = Number(await readFile(path.join(other.root, ".lab/transient/lab-dies.pid"), "utf8"));
      expect(isProcessAlive(pid)).toBe(true);
    } finally {
      await other.stop();
    }
    await waitUntil(() => !isProcessAlive(pid), { what: "the timer's process to end" });
  });
});
