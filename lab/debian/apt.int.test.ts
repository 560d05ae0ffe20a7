import { existsSync, readFileSync } from "node:fs";
import { readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { isProcessAlive, startLab, waitUntil, type LabNode } from "../index";
import { labExec, labSession } from "../test-helpers";
import { isInstalled, readInstalled } from "./dpkg-status";
import { LAB_PROXMOX_KEYRING } from "./apt-sources";
import { PVE_INSTALL_REPO_SOURCES } from "./seed";

async function addProxmoxRepo(lab: LabNode, key = true): Promise<void> {
  await writeFile(
    path.join(lab.root, "etc/apt/sources.list.d/pve-install-repo.sources"),
    PVE_INSTALL_REPO_SOURCES,
  );
  if (key)
    await writeFile(
      path.join(lab.root, "usr/share/keyrings/proxmox-archive-keyring.gpg"),
      LAB_PROXMOX_KEYRING,
    );
}

describe("lab apt/dpkg on a fresh Debian 13 host", () => {
  let lab: LabNode;
  beforeAll(async () => {
    lab = await startLab({ timeScale: 0.01 });
  });
  afterAll(async () => {
    await lab?.stop();
  });

  it("starts as stock Debian: Debian kernel packages, no Proxmox, Debian lists present", async () => {
    const installed = readInstalled(lab.root);
    expect(installed.has("linux-image-amd64")).toBe(true);
    expect(installed.has("proxmox-ve")).toBe(false);
    const r = await labExec(lab, "apt-get update");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("Hit:1 http://deb.debian.org/debian trixie InRelease");
  });

  it("cannot install Proxmox packages before the Proxmox repository is configured", async () => {
    const r = await labExec(
      lab,
      "DEBIAN_FRONTEND=noninteractive apt-get install -y proxmox-default-kernel",
    );
    expect(r.code).toBe(100);
    expect(r.stderr).toContain("E: Unable to locate package proxmox-default-kernel");
  });

  it("update fails while the repository's signing key is missing, and succeeds once it is there", async () => {
    await addProxmoxRepo(lab, false);
    const without = await labExec(lab, "apt-get update");
    expect(without.code).toBe(100);
    expect(without.stderr).toContain(
      "E: The repository 'http://download.proxmox.com/debian/pve trixie InRelease' is not signed.",
    );
    expect(without.stdout).toContain("Missing key");
    const still = await labExec(lab, "apt-get install -y proxmox-default-kernel");
    expect(still.stderr).toContain("Unable to locate package");

    // An HTML error page saved as the keyring is no key either.
    await writeFile(
      path.join(lab.root, "usr/share/keyrings/proxmox-archive-keyring.gpg"),
      "<html>",
    );
    expect((await labExec(lab, "apt-get update")).code).toBe(100);

    await addProxmoxRepo(lab, true);
    const withKey = await labExec(lab, "apt-get update");
    expect(withKey.code).toBe(0);
    expect(withKey.stdout).toContain("trixie/pve-no-subscription amd64 Packages");
  });

  it("installs proxmox-default-kernel taking simulated time, records it in dpkg status, sets the next-boot kernel", async () => {
    const started = Date.now();
    const r = await labExec(
      lab,
      "DEBIAN_FRONTEND=noninteractive apt-get install -y proxmox-default-kernel",
    );
    const took = Date.now() - started;
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("Setting up proxmox-kernel-6.17.2-1-pve-signed (6.17.2-1) ...");
    // Setup 27 s nominal (the signed kernel 25 s, its two meta packages 1 s each) and 5.3 s of
    // download (105 MB), × 0.01.
    expect(took).toBeGreaterThan(320);
    expect(isInstalled(lab.root, "proxmox-default-kernel")).toBe(true);
    expect(isInstalled(lab.root, "proxmox-kernel-6.17.2-1-pve-signed")).toBe(true);
    expect((await readFile(path.join(lab.root, ".lab/next-kernel"), "utf8")).trim()).toBe(
      "6.17.2-1-pve",
    );
    // The running kernel only changes with a reboot.
    expect((await labExec(lab, "uname -r")).stdout.trim()).toBe("6.12.57+deb13-amd64");
    const q = await labExec(
      lab,
      "dpkg-query -W -f='${Status}' proxmox-default-kernel; echo; dpkg-query -W -f='${Status}' proxmox-ve; echo \" rc=$?\"",
    );
    expect(q.stdout).toBe("install ok installed\n rc=1\n");
    expect(q.stderr).toContain("dpkg-query: no packages found matching proxmox-ve");
    const again = await labExec(lab, "apt-get install -y proxmox-default-kernel");
    expect(again.stdout).toContain("proxmox-default-kernel is already the newest version (2.0.0).");
  });

  it("without -y, an install that pulls in more packages aborts like apt without a terminal", async () => {
    const r = await labExec(lab, "apt-get install chrony open-iscsi postfix");
    expect(r.code).toBe(1);
    expect(r.stdout).toContain("Do you want to continue? [Y/n] Abort.");
    expect(isInstalled(lab.root, "postfix")).toBe(false);
  });

  it("postfix waits on its debconf question unless noninteractive or preseeded", async () => {
    const session = await labSession(lab);
    // apt-get waits on the debconf question; lib/ssh gives up after its timeout and stops the
    // command's process group, so no abandoned apt-get keeps holding the dpkg lock.
    try {
      await expect(session.exec("apt-get install -y postfix", { timeoutMs: 2500 })).rejects.toThrow(
        /did not finish within/,
      );
    } finally {
      session.close();
    }
    expect(isInstalled(lab.root, "postfix")).toBe(false);
    const lockFile = path.join(lab.root, "var/lib/dpkg/lock-frontend");
    await waitUntil(
      () => !existsSync(lockFile) || !isProcessAlive(Number(readFileSync(lockFile, "utf8").trim())),
      { what: "the given-up apt-get to be stopped" },
    );
    const seeded = await labExec(
      lab,
      "echo 'postfix postfix/main_mailer_type select Local only' | debconf-set-selections && apt-get install -y postfix",
    );
    expect(seeded.code, seeded.stderr).toBe(0);
    expect(isInstalled(lab.root, "postfix")).toBe(true);
    expect(await readFile(path.join(lab.root, "etc/postfix/main.cf"), "utf8")).toContain(
      "inet_interfaces = loopback-only",
    );
  });

  it("proxmox-ve pulls its dependency set, replaces ifupdown with ifupdown2", async () => {
    const r = await labExec(
      lab,
      "DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends proxmox-ve open-iscsi chrony",
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("The following packages will be REMOVED:\n  ifupdown");
    for (const p of [
      "proxmox-ve",
      "pve-manager",
      "qemu-server",
      "ifupdown2",
      "chrony",
      "open-iscsi",
    ])
      expect(isInstalled(lab.root, p), p).toBe(true);
    expect(isInstalled(lab.root, "ifupdown")).toBe(false);
  });

  it("refuses to remove the running Debian kernel; removes os-prober and the meta package", async () => {
    const r = await labExec(
      lab,
      "DEBIAN_FRONTEND=noninteractive apt-get remove -y linux-image-amd64 'linux-image-6.12*'",
    );
    expect(r.code).toBe(100);
    expect(r.stderr).toContain("E: Sub-process /usr/bin/dpkg returned an error code (1)");
    expect(isInstalled(lab.root, "linux-image-6.12.57+deb13-amd64")).toBe(true);
    const p = await labExec(lab, "apt-get purge -y os-prober && apt-get remove -y os-prober");
    expect(p.code).toBe(0);
    expect(p.stdout).toContain("Package 'os-prober' is not installed, so not removed");
    expect(isInstalled(lab.root, "os-prober")).toBe(false);
    const l = await labExec(lab, "dpkg -l 'proxmox-*' | tail -n +6");
    expect(l.stdout).toMatch(/^ii {2}proxmox-default-kernel +2\.0\.0 +all /m);
  });

  it("an enabled enterprise repository without subscription fails update with 401; Enabled: false silences it", async () => {
    const file = path.join(lab.root, "etc/apt/sources.list.d/pve-enterprise.sources");
    const stanza =
      "Types: deb\nURIs: https://enterprise.proxmox.com/debian/pve\nSuites: trixie\nComponents: pve-enterprise\nSigned-By: /usr/share/keyrings/proxmox-archive-keyring.gpg\n";
    await writeFile(file, stanza);
    const r = await labExec(lab, "apt-get update");
    expect(r.code).toBe(100);
    expect(r.stdout).toContain("401  Unauthorized");
    expect(r.stderr).toContain(
      "E: Failed to fetch https://enterprise.proxmox.com/debian/pve/dists/trixie/InRelease  401  Unauthorized",
    );
    await writeFile(file, `${stanza}Enabled: false\n`);
    expect((await labExec(lab, "apt-get update")).code).toBe(0);
    await rm(file);
  });

  it("fault aptNetworkDown: update only warns (exit 0) and keeps lists, --error-on=any fails, installs fail", async () => {
    lab.setDebianFaults({ aptNetworkDown: true });
    try {
      const u = await labExec(lab, "apt-get update");
      expect(u.code).toBe(0);
      expect(u.stderr).toContain("W: Some index files failed to download.");
      expect((await labExec(lab, "apt-get update --error-on=any")).code).toBe(100);
      const i = await labExec(lab, "apt-get install -y jq");
      expect(i.code).toBe(100);
      expect(i.stderr).toContain("Temporary failure resolving");
      expect(isInstalled(lab.root, "jq")).toBe(false);
    } finally {
      lab.setDebianFaults({ aptNetworkDown: false });
    }
    expect((await labExec(lab, "apt-get install -y jq")).code).toBe(0);
  });

  it("fault aptLocked: every apt-get fails at once with the dpkg lock message", async () => {
    lab.setDebianFaults({ aptLocked: true });
    try {
      const r = await labExec(lab, "apt-get install -y bridge-utils");
      expect(r.code).toBe(100);
      expect(r.stderr).toContain("E: Could not get lock /var/lib/dpkg/lock-frontend");
    } finally {
      lab.setDebianFaults({ aptLocked: false });
    }
    expect(lab.switches.get("debian.aptLocked")).toBe(false);
    await lab.switches.apply({ "debian.aptLocked": true });
    expect(lab.debianFaults.aptLocked).toBe(true);
    expect((await labExec(lab, "apt-get update")).code).toBe(100);
    await lab.switches.apply({ "debian.aptLocked": false });
  });
});
