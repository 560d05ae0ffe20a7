import fs from "node:fs";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { markInstalled } from "../debian/dpkg-status";
import { startLab, type LabNode, type PveStorageLayout } from "../index";
import { labExec, labExecOk } from "../test-helpers";
import { apiGet } from "./test-helpers";

/**
 * The simulated Proxmox tools over the lab's real SSH, the way the console's scripts run them.
 * Volume names are Proxmox's, per storage type and format (docs/decisions.md, "Volume names are
 * Proxmox's, and raw on directory storage").
 */

const IMAGE = "/var/lib/clupilot/debian-13.raw";

async function startProxmoxLab(storage: PveStorageLayout): Promise<LabNode> {
  const lab = await startLab({ state: "proxmox", storage, timeScale: 0.01 });
  const image = path.join(lab.root, IMAGE);
  fs.mkdirSync(path.dirname(image), { recursive: true });
  fs.writeFileSync(image, Buffer.alloc(2 * 1024 * 1024, 1));
  return lab;
}

function configOf(text: string): Record<string, string> {
  return Object.fromEntries(
    text
      .split("\n")
      .filter(Boolean)
      .map((l) => [l.slice(0, l.indexOf(":")), l.slice(l.indexOf(":") + 2)]),
  );
}

async function buildTemplate(lab: LabNode, vmid: number, storage: string, format = "") {
  await labExecOk(
    lab,
    `qm create ${vmid} --name t${vmid} --memory 1024 --net0 virtio,bridge=vmbr0 --scsihw virtio-scsi-pci` +
      ` && qm set ${vmid} --scsi0 ${storage}:0,import-from=${IMAGE}${format}` +
      ` && qm set ${vmid} --ide2 ${storage}:cloudinit --boot order=scsi0 --serial0 socket --vga serial0`,
  );
  const before = configOf(await labExecOk(lab, `qm config ${vmid}`));
  await labExecOk(lab, `qm template ${vmid}`);
  const after = configOf(await labExecOk(lab, `qm config ${vmid}`));
  return { before, after };
}

const CASES: Array<{
  layout: PveStorageLayout;
  storage: string;
  format: string;
  disk: string;
  base: string;
  cloudinit: string;
  file: (vmid: number) => string;
}> = [
  {
    layout: "dir",
    storage: "local",
    format: "",
    disk: "local:9000/vm-9000-disk-0.raw",
    base: "local:9000/base-9000-disk-0.raw",
    cloudinit: "local:9000/vm-9000-cloudinit.qcow2",
    file: () => "var/lib/vz/images/9000/base-9000-disk-0.raw",
  },
  {
    layout: "dir",
    storage: "local",
    format: ",format=qcow2",
    disk: "local:9000/vm-9000-disk-0.qcow2",
    base: "local:9000/base-9000-disk-0.qcow2",
    cloudinit: "local:9000/vm-9000-cloudinit.qcow2",
    file: () => "var/lib/vz/images/9000/base-9000-disk-0.qcow2",
  },
  {
    layout: "lvm-thin",
    storage: "local-lvm",
    format: "",
    disk: "local-lvm:vm-9000-disk-0",
    base: "local-lvm:base-9000-disk-0",
    cloudinit: "local-lvm:vm-9000-cloudinit",
    file: () => ".lab/volumes/local-lvm/base-9000-disk-0",
  },
  {
    layout: "zfs",
    storage: "local-zfs",
    format: "",
    disk: "local-zfs:vm-9000-disk-0",
    base: "local-zfs:base-9000-disk-0",
    cloudinit: "local-zfs:vm-9000-cloudinit",
    file: () => ".lab/volumes/local-zfs/base-9000-disk-0",
  },
];

describe.each(CASES)(
  "qm import and template on $layout storage $storage$format",
  ({ layout, storage, format, disk, base, cloudinit, file }) => {
    let lab: LabNode;
    beforeAll(async () => {
      lab = await startProxmoxLab(layout);
    });
    afterAll(async () => {
      await lab?.stop();
    });

    it(`names the imported disk ${disk}, the template's ${base}, the cloud-init drive ${cloudinit}`, async () => {
      const { before, after } = await buildTemplate(lab, 9000, storage, format);
      expect(before.scsi0).toBe(`${disk},size=2M`);
      expect(before.ide2).toBe(`${cloudinit},media=cdrom`);
      expect(before.template).toBeUndefined();
      expect(before.net0).toMatch(/^virtio=BC:24:11:[0-9A-F:]{8},bridge=vmbr0$/);
      expect(after.template).toBe("1");
      expect(after.scsi0).toBe(`${base},size=2M`);
      expect(after.ide2).toBe(`${cloudinit},media=cdrom`);
      expect(fs.existsSync(path.join(lab.root, file(9000)))).toBe(true);
      expect(fs.readlinkSync(path.join(lab.root, "etc/pve/qemu-server"))).toBe(
        "nodes/pve1/qemu-server",
      );
    });
  },
);

describe("qm and pvesm on Proxmox installed over Debian (local without images)", () => {
  let lab: LabNode;
  beforeAll(async () => {
    lab = await startProxmoxLab("dir-no-images");
  });
  afterAll(async () => {
    await lab?.stop();
  });

  it("refuses an import onto a storage without images content", async () => {
    await labExecOk(lab, "qm create 9000 --name t --memory 512");
    const result = await labExec(lab, `qm set 9000 --scsi0 local:0,import-from=${IMAGE}`);
    expect(result.code).toBe(255);
    expect(result.stderr).toContain("storage 'local' does not support vm images");
    expect((await labExecOk(lab, "pvesm status --content images")).split("\n")[1]).toBe("");
  });

  it("pvesm set --content replaces the whole list and drops unknown types with a warning", async () => {
    const cfg = () => fs.readFileSync(path.join(lab.root, "etc/pve/storage.cfg"), "utf8");
    const set = await labExec(lab, "pvesm set local --content iso,vztmpl,backup,images,bogus");
    expect(set.code).toBe(0);
    expect(set.stderr).toContain("'bogus'");
    expect(cfg()).toBe("dir: local\n\tpath /var/lib/vz\n\tcontent iso,vztmpl,backup,images\n");
    expect(await labExecOk(lab, "pvesm status --content images")).toMatch(/^local\s+dir\s+active/m);

    await labExecOk(lab, "pvesm set local --content images");
    expect(cfg()).toContain("\tcontent images\n");
    expect(cfg()).not.toContain("iso");
  });

  it("qm template can write the flag and fail the conversion while exiting 0 (fault)", async () => {
    await labExecOk(lab, `qm set 9000 --scsi0 local:0,import-from=${IMAGE}`);
    lab.pve.setToolFaults({ templateConversionFails: true });
    try {
      const result = await labExec(lab, "qm template 9000");
      expect(result.code).toBe(0);
      const conf = configOf(await labExecOk(lab, "qm config 9000"));
      expect(conf.template).toBe("1");
      expect(conf.scsi0).toBe("local:9000/vm-9000-disk-0.raw,size=2M");
    } finally {
      lab.pve.setToolFaults({ templateConversionFails: false });
    }
  });

  it("qm destroy refuses a running or protected VM, then removes config and disks", async () => {
    await labExecOk(lab, "qm create 101 --name run --memory 512 --scsi0 local:1 && qm start 101");
    const running = await labExec(lab, "qm destroy 101 --purge");
    expect(running.code).toBe(255);
    expect(running.stderr).toBe("VM 101 is running - destroy failed\n");
    await labExecOk(lab, "qm stop 101 && qm set 101 --protection 1");
    const protectedVm = await labExec(lab, "qm destroy 101 --purge");
    expect(protectedVm.stderr).toBe("can't remove VM 101 - protection mode enabled\n");
    await labExecOk(lab, "qm set 101 --protection 0 && qm destroy 101 --purge");
    expect(fs.existsSync(path.join(lab.root, "var/lib/vz/images/101"))).toBe(false);
    const gone = await labExec(lab, "qm config 101");
    expect(gone.code).toBe(255);
    expect(gone.stderr).toBe(
      "Configuration file 'nodes/pve1/qemu-server/101.conf' does not exist\n",
    );
    expect(await labExecOk(lab, "qm list")).not.toMatch(/^\s+101 /m);
  });

  it("pveum rejects a role naming VM.Monitor (removed in PVE 9) and accepts VM.GuestAgent.Audit", async () => {
    const bad = await labExec(lab, 'pveum role add Console -privs "VM.Audit VM.Monitor"');
    expect(bad.code).toBe(255);
    expect(bad.stderr).toBe("create role failed: invalid privilege 'VM.Monitor'\n");
    await labExecOk(lab, 'pveum role add Console -privs "VM.Audit VM.GuestAgent.Audit"');
    expect(fs.readFileSync(path.join(lab.root, "etc/pve/user.cfg"), "utf8")).toContain(
      "role:Console:VM.Audit,VM.GuestAgent.Audit:",
    );
  });

  it("pveversion reports pve-manager and the running Proxmox kernel", async () => {
    expect(await labExecOk(lab, "pveversion")).toMatch(
      /^pve-manager\/9\.1\.\d+\/[0-9a-f]+ \(running kernel: 6\.17\.2-1-pve\)\n$/,
    );
  });
});

describe("a fresh Debian node", () => {
  let lab: LabNode;
  beforeAll(async () => {
    lab = await startLab();
  });
  afterAll(async () => {
    await lab?.stop();
  });

  it("has no Proxmox tools and no API yet", async () => {
    const result = await labExec(lab, "qm list");
    expect(result.code).toBe(127);
    expect(result.stderr).toContain("qm: command not found");
    expect(lab.pve.token).toBeNull();
    expect(fs.existsSync(path.join(lab.root, "etc/pve"))).toBe(false);
    // Nothing listens on 8006 before Proxmox VE is installed: the connection is cut.
    await expect(apiGet(lab, "/version", null, { timeoutMs: 2000 })).rejects.toThrow();
  });

  it("brings up /etc/pve like a Debian install (local without images) once proxmox-ve is installed", async () => {
    markInstalled(lab.root, [
      { name: "proxmox-ve", version: "9.1.0", architecture: "all" },
      { name: "pve-manager", version: "9.1.1" },
    ]);
    const status = await labExecOk(lab, "pvesm status --content images");
    expect(status.trim().split("\n")).toHaveLength(1);
    expect(fs.readFileSync(path.join(lab.root, "etc/pve/storage.cfg"), "utf8")).toBe(
      "dir: local\n\tpath /var/lib/vz\n\tcontent iso,vztmpl,backup\n",
    );
    expect((await apiGet(lab, "/version", null)).status).toBe(401);
  });
});
