import { copyFile, mkdir } from "node:fs/promises";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { startImageServer, startLab, type ImageServer, type LabNode } from "../index";
import { labExec } from "../test-helpers";
import { markInstalled } from "../debian/dpkg-status";

/** The console's image folder on the host (commands), also joined onto the root folder here. */
const DIR = "/var/lib/clupilot/images";
const IMG = `${DIR}/debian-13-genericcloud-amd64.qcow2`;

describe("lab image server and libguestfs subset", () => {
  let lab: LabNode;
  let images: ImageServer;
  beforeAll(async () => {
    lab = await startLab({ timeScale: 0.01 });
    images = await startImageServer({ imageSizeBytes: 4 * 1024 * 1024 });
    await mkdir(path.join(lab.root, DIR), { recursive: true });
  });
  afterAll(async () => {
    await images?.stop();
    await lab?.stop();
  });

  const fetchAndCheck = (lab: LabNode, images: ImageServer) =>
    labExec(
      lab,
      `cd ${DIR} && rm -f debian-13-genericcloud-amd64.qcow2 SHA512SUMS && ` +
        `curl -fsSL -o SHA512SUMS '${images.sumsUrl}' && curl -fsSL -o debian-13-genericcloud-amd64.qcow2 '${images.imageUrl}' && ` +
        "sha512sum -c --ignore-missing SHA512SUMS",
    );

  it("serves the image and SHA512SUMS; real curl + sha512sum -c --ignore-missing verify it", async () => {
    const r = await fetchAndCheck(lab, images);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("debian-13-genericcloud-amd64.qcow2: OK\n");
    const size = await labExec(lab, `stat -c %s ${IMG}`);
    expect(Number(size.stdout.trim())).toBe(4 * 1024 * 1024);
  });

  it("libguestfs tools are missing until libguestfs-tools is installed", async () => {
    const r = await labExec(lab, `virt-filesystems -a ${IMG} --all --long`);
    expect(r.code).toBe(127);
    const i = await labExec(
      lab,
      "DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libguestfs-tools",
    );
    expect(i.code, i.stderr).toBe(0);
  });

  it("virt-filesystems shows the cloud image's layout (sda1 ext4, sda14 BIOS boot, sda15 vfat)", async () => {
    const r = await labExec(lab, `virt-filesystems -a ${IMG} --all --long -h`);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^Name +Type +VFS +Label +MBR +Size +Parent$/);
    expect(r.stdout).toMatch(/^\/dev\/sda1 +filesystem +ext4 +- +- +2\.9G +-$/m);
    expect(r.stdout).toMatch(/^\/dev\/sda15 +filesystem +vfat /m);
    expect(r.stdout).toMatch(/^\/dev\/sda14 +partition +- +- +- +3\.0M +\/dev\/sda$/m);
    expect(r.stdout).toMatch(/^\/dev\/sda +device +- +- +- +3\.0G +-$/m);
    const plain = await labExec(lab, `virt-filesystems -a ${IMG}`);
    expect(plain.stdout).toBe("/dev/sda1\n/dev/sda15\n");
  });

  it("virt-ls / virt-cat / guestfish read the image: no guest agent, empty machine-id, user debian", async () => {
    const r = await labExec(
      lab,
      `virt-ls -a ${IMG} /home; virt-cat -a ${IMG} /etc/machine-id | wc -c; guestfish --ro -a ${IMG} -i cat /etc/passwd | grep ^debian; virt-cat -a ${IMG} /var/lib/dpkg/status`,
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.startsWith("debian\n0\ndebian:x:1000:1000:")).toBe(true);
    for (const p of ["cloud-init", "cloud-guest-utils", "iputils-ping", "openssh-server", "curl"])
      expect(r.stdout).toContain(`Package: ${p}\nStatus: install ok installed`);
    expect(r.stdout).not.toContain("qemu-guest-agent");
    const missing = await labExec(lab, `virt-cat -a ${IMG} /etc/nope`);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("No such file or directory");
    const info = await labExec(
      lab,
      `apt-get install -y qemu-utils >/dev/null && qemu-img info --output=json ${IMG}`,
    );
    expect(JSON.parse(info.stdout)).toMatchObject({
      format: "qcow2",
      "virtual-size": 3 * 1024 ** 3,
    });
  });

  it("virt-customize --install then virt-cat shows the packages; --truncate empties the file", async () => {
    await copyFile(path.join(lab.root, IMG), path.join(lab.root, DIR, "work.qcow2"));
    const r = await labExec(
      lab,
      `virt-customize -a ${DIR}/work.qcow2 --install qemu-guest-agent,cloud-guest-utils,iputils-ping --truncate /etc/machine-id && virt-cat -a ${DIR}/work.qcow2 /var/lib/dpkg/status`,
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(
      "Installing packages: qemu-guest-agent cloud-guest-utils iputils-ping",
    );
    expect(r.stdout).toContain("Package: qemu-guest-agent\nStatus: install ok installed");
    const bad = await labExec(lab, `virt-customize -a ${DIR}/work.qcow2 --install no-such-package`);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("Unable to locate package no-such-package");
  });

  it("fault virtCustomizeSkipsInstall: success reported, nothing installed", async () => {
    await copyFile(path.join(lab.root, IMG), path.join(lab.root, DIR, "work2.qcow2"));
    lab.setDebianFaults({ virtCustomizeSkipsInstall: true });
    try {
      const r = await labExec(
        lab,
        `virt-customize -a ${DIR}/work2.qcow2 --install qemu-guest-agent; echo rc=$?; virt-cat -a ${DIR}/work2.qcow2 /var/lib/dpkg/status | grep -c qemu-guest-agent`,
      );
      expect(r.stdout).toContain("rc=0");
      expect(r.stdout.trimEnd().endsWith("\n0")).toBe(true);
    } finally {
      lab.setDebianFaults({ virtCustomizeSkipsInstall: false });
    }
  });

  it("fault checksumMismatch: sha512sum -c fails", async () => {
    images.faults.checksumMismatch = true;
    try {
      const r = await fetchAndCheck(lab, images);
      expect(r.code).toBe(1);
      expect(r.stdout).toContain("debian-13-genericcloud-amd64.qcow2: FAILED");
    } finally {
      images.faults.checksumMismatch = false;
    }
  });

  it("fault cutOffAfterBytes: curl fails mid-body (exit 18) and a kept partial file is a corrupt image", async () => {
    images.faults.cutOffAfterBytes = 1024 * 1024;
    try {
      const r = await labExec(
        lab,
        `curl -fsS -o ${DIR}/cut.qcow2 '${images.imageUrl}'; echo rc=$?; stat -c %s ${DIR}/cut.qcow2; virt-filesystems -a ${DIR}/cut.qcow2; echo rc=$?`,
      );
      expect(r.stdout).toMatch(/^rc=18\n1048576\nrc=1\n$/);
      expect(r.stderr).toContain("corrupt");
    } finally {
      images.faults.cutOffAfterBytes = null;
    }
  });

  it("fault bytesPerSecond: the download takes as long as the rate says", async () => {
    images.faults.bytesPerSecond = 4 * 1024 * 1024;
    try {
      const started = Date.now();
      const r = await labExec(lab, `curl -fsS -o /dev/null '${images.imageUrl}'`);
      expect(r.code).toBe(0);
      expect(Date.now() - started).toBeGreaterThan(800);
    } finally {
      images.faults.bytesPerSecond = null;
    }
  });

  it("a missing image fails like libguestfs", async () => {
    markInstalled(lab.root, [{ name: "libguestfs-tools", version: "1:1.56.1-1" }]);
    const r = await labExec(lab, `virt-ls -a ${DIR}/none.qcow2 /`);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("No such file or directory");
  });
});
