import fs from "node:fs";
import path from "node:path";

import { markInstalled, readInstalled, type InstalledPackage } from "../debian/dpkg-status";
import { labDir } from "../debian/lab-state";
import { installNodeCert } from "./cert";
import {
  newTokenSecret,
  readTokenSecrets,
  readUserCfg,
  writeTokenSecrets,
  writeUserCfg,
} from "./access";
import {
  findStorage,
  formatSize,
  isFileStorage,
  pveDir,
  qemuServerDir,
  readStorageCfg,
  storageCfgPath,
  volumeId,
  volumePath,
  withPveLock,
  writeAtomic,
  writeVmConfig,
  type VmConfig,
} from "./state";

/**
 * Seeds a lab root into one of the node states of the lab issue:
 * - `fresh`: nothing Proxmox (plain Debian 13);
 * - `proxmox`: Proxmox VE 9.1 installed and booted into its kernel, with one of the storage
 *   layouts found on real hosts (test/fixtures/proxmox/storage-cfg);
 * - `onboarded`: `proxmox` plus the console's API user, role and token (and optional templates).
 */

export type PveState = "fresh" | "proxmox" | "onboarded";
export type PveStorageLayout = "dir-no-images" | "dir" | "lvm-thin" | "zfs";

/** Verbatim from test/fixtures/proxmox/storage-cfg (its README: where each comes from). */
export const STORAGE_LAYOUTS: Record<PveStorageLayout, string> = {
  // Proxmox installed over Debian, as observed on such a host: `local` without `images`.
  "dir-no-images": "dir: local\n\tpath /var/lib/vz\n\tcontent iso,vztmpl,backup\n",
  // ISO installer, ext4 root without LVM-thin: `local` holds images.
  dir: "dir: local\n\tpath /var/lib/vz\n\tcontent iso,vztmpl,backup,rootdir,images,import\n",
  "lvm-thin":
    "dir: local\n\tpath /var/lib/vz\n\tcontent iso,vztmpl,backup,import\n\n" +
    "lvmthin: local-lvm\n\tthinpool data\n\tvgname pve\n\tcontent rootdir,images\n",
  zfs:
    "dir: local\n\tpath /var/lib/vz\n\tcontent iso,vztmpl,backup,import\n\n" +
    "zfspool: local-zfs\n\tpool rpool/data\n\tsparse\n\tcontent images,rootdir\n",
};

export const PVE_VERSION = { version: "9.1.1", release: "9.1", repoid: "42db4a6cf33dac83" };

export const PVE_KERNEL = {
  release: "6.17.2-1-pve",
  version: "#1 SMP PREEMPT_DYNAMIC PMX 6.17.2-1 (2025-10-21T11:55Z)",
};

/** Packages `pveversion -v` lists, as installed by `apt-get install proxmox-ve`. */
export const PVE_PACKAGES: InstalledPackage[] = [
  { name: "proxmox-ve", version: "9.1.0", architecture: "all" },
  { name: "pve-manager", version: "9.1.1" },
  { name: "proxmox-kernel-helper", version: "9.0.4", architecture: "all" },
  { name: "proxmox-kernel-6.17.2-1-pve-signed", version: "6.17.2-1" },
  { name: "proxmox-default-kernel", version: "2.0.0", architecture: "all" },
  { name: "pve-cluster", version: "9.0.7" },
  { name: "pve-container", version: "6.0.18", architecture: "all" },
  { name: "pve-firewall", version: "6.0.4" },
  { name: "pve-ha-manager", version: "5.0.8", architecture: "all" },
  { name: "libpve-access-control", version: "9.0.4", architecture: "all" },
  { name: "libpve-common-perl", version: "9.0.15", architecture: "all" },
  { name: "libpve-storage-perl", version: "9.0.18", architecture: "all" },
  { name: "qemu-server", version: "9.1.0" },
  { name: "pve-qemu-kvm", version: "10.1.2-4" },
  { name: "lxc-pve", version: "6.0.5-3" },
  { name: "proxmox-backup-client", version: "4.0.20-1" },
  { name: "zfsutils-linux", version: "2.3.4-pve1" },
];

/** The console's API identity on an onboarded node. */
export const CONSOLE_USER = "clupilot@pve";
export const CONSOLE_TOKEN_NAME = "console";
export const CONSOLE_ROLE = "CluPilot";
/** Least privileges the console needs: read, build templates, clone, power. */
export const CONSOLE_ROLE_PRIVS = [
  "Datastore.AllocateSpace",
  "Datastore.Audit",
  "Sys.Audit",
  "VM.Allocate",
  "VM.Audit",
  "VM.Clone",
  "VM.Config.CDROM",
  "VM.Config.CPU",
  "VM.Config.Cloudinit",
  "VM.Config.Disk",
  "VM.Config.HWType",
  "VM.Config.Memory",
  "VM.Config.Network",
  "VM.Config.Options",
  "VM.PowerMgmt",
  // What CreateApiToken grants for power: shutting the node down, consolidating a cluster.
  "Sys.PowerMgmt",
  "VM.Migrate",
];

export type SeedOptions = {
  state: PveState;
  storage?: PveStorageLayout;
  /** Node name; default: the root's `etc/hostname`. */
  node: string;
  /** For `onboarded`: template VMIDs to create (disk named `base-…` on the image storage). */
  templates?: number[];
};

export type SeedResult = {
  /** For `onboarded`: the console's token. */
  token: { id: string; secret: string } | null;
};

export function seedPveState(root: string, options: SeedOptions): SeedResult {
  if (options.state === "fresh") return { token: null };
  installProxmoxVe(root, { node: options.node, storage: options.storage ?? "dir-no-images" });
  bootPveKernel(root);
  if (options.state === "proxmox") return { token: null };
  const token = createConsoleToken(root);
  for (const vmid of options.templates ?? []) createTemplate(root, options.node, vmid);
  return { token };
}

/**
 * What installing `proxmox-ve` leaves behind: packages marked installed, pmxcfs' `/etc/pve`
 * (node folder, `qemu-server`/`local` symlinks, `user.cfg` with root@pam, `storage.cfg` in the
 * given layout) and `/var/lib/vz`. Keeps existing files. Usable by the simulated apt-get.
 */
export function installProxmoxVe(
  root: string,
  options: { node: string; storage?: PveStorageLayout },
): void {
  // Packages the simulated apt-get already installed keep their versions.
  const installed = readInstalled(root);
  markInstalled(
    root,
    PVE_PACKAGES.filter((p) => !installed.has(p.name)),
  );
  createPmxcfs(root, options);
}

/**
 * pmxcfs' `/etc/pve` as a freshly installed node has it: node folder with the API certificate
 * (`pve-ssl.pem`/`.key`), `qemu-server`/`local`/`lxc` symlinks, `user.cfg` with root@pam, `storage.cfg` in the given layout (default: Proxmox
 * installed over Debian, `local` without images), and `/var/lib/vz`. Keeps existing files.
 */
export function createPmxcfs(
  root: string,
  options: { node: string; storage?: PveStorageLayout },
): void {
  withPveLock(root, () => {
    const pve = pveDir(root);
    for (const dir of [
      qemuServerDir(root, options.node),
      path.join(pve, "nodes", options.node, "lxc"),
      path.join(pve, "nodes", options.node, "priv"),
      path.join(pve, "priv"),
      path.join(pve, "firewall"),
      path.join(pve, "ha"),
      path.join(pve, "virtual-guest"),
    ]) {
      fs.mkdirSync(dir, { recursive: true });
    }
    linkIfMissing(path.join(pve, "local"), `nodes/${options.node}`);
    installNodeCert(root, options.node);
    linkIfMissing(path.join(pve, "qemu-server"), `nodes/${options.node}/qemu-server`);
    linkIfMissing(path.join(pve, "lxc"), `nodes/${options.node}/lxc`);
    if (!fs.existsSync(storageCfgPath(root))) {
      writeAtomic(storageCfgPath(root), STORAGE_LAYOUTS[options.storage ?? "dir-no-images"]);
    }
    if (!fs.existsSync(path.join(pve, "user.cfg"))) writeUserCfg(root, readUserCfg(root));
    if (!fs.existsSync(path.join(pve, "datacenter.cfg"))) {
      writeAtomic(path.join(pve, "datacenter.cfg"), "keyboard: en-us\n");
    }
    for (const sub of ["images", "template/iso", "template/cache", "dump", "snippets", "import"]) {
      fs.mkdirSync(path.join(root, "var/lib/vz", sub), { recursive: true });
    }
  });
}

/** Switches the reported kernel to the Proxmox one (what a reboot after install does). */
export function bootPveKernel(root: string): void {
  writeAtomic(path.join(labDir(root), "kernel"), `${PVE_KERNEL.release}\n`);
  writeAtomic(path.join(labDir(root), "kernel-version"), `${PVE_KERNEL.version}\n`);
}

/** The console's user, role, ACLs and token (privsep=1, with its own ACL on `/`). */
export function createConsoleToken(root: string): { id: string; secret: string } {
  return withPveLock(root, () => {
    const cfg = readUserCfg(root);
    const id = `${CONSOLE_USER}!${CONSOLE_TOKEN_NAME}`;
    if (!cfg.users.some((u) => u.userid === CONSOLE_USER)) {
      cfg.users.push({
        userid: CONSOLE_USER,
        enable: true,
        expire: 0,
        firstname: "",
        lastname: "",
        email: "",
        comment: "CluPilot console",
      });
    }
    cfg.roles.set(CONSOLE_ROLE, [...CONSOLE_ROLE_PRIVS]);
    if (!cfg.tokens.some((t) => t.id === id)) {
      cfg.tokens.push({ id, expire: 0, privsep: true, comment: "" });
    }
    for (const ugid of [CONSOLE_USER, id]) {
      if (!cfg.acls.some((a) => a.path === "/" && a.ugids.includes(ugid))) {
        cfg.acls.push({ propagate: true, path: "/", ugids: [ugid], roles: [CONSOLE_ROLE] });
      }
    }
    writeUserCfg(root, cfg);
    const secrets = readTokenSecrets(root);
    const secret = secrets.get(id) ?? newTokenSecret();
    secrets.set(id, secret);
    writeTokenSecrets(root, secrets);
    return { id, secret };
  });
}

/** A finished template as `qm template` leaves it: `template: 1`, boot disk `base-…`. */
export function createTemplate(root: string, node: string, vmid: number): void {
  withPveLock(root, () => {
    const cfg = readStorageCfg(root);
    const entry =
      cfg.storages.find((s) => s.id !== "local" && /images/.test(contentOf(s))) ??
      findStorage(cfg, "local");
    if (!entry) throw new Error("lab: no storage for the template");
    const diskName = `base-${vmid}-disk-0${isFileStorage(entry) ? ".raw" : ""}`;
    const ciName = `vm-${vmid}-cloudinit${isFileStorage(entry) ? ".qcow2" : ""}`;
    const size = 3 * 1024 ** 3;
    const disk = volumePath(root, entry, vmid, diskName);
    fs.mkdirSync(path.dirname(disk), { recursive: true });
    fs.writeFileSync(disk, "");
    fs.truncateSync(disk, size);
    fs.writeFileSync(volumePath(root, entry, vmid, ciName), "");
    const config: VmConfig = new Map([
      ["agent", "enabled=1"],
      ["boot", "order=scsi0"],
      ["cores", "2"],
      ["ide2", `${volumeId(entry, vmid, ciName)},media=cdrom`],
      ["memory", "2048"],
      ["meta", `creation-qemu=10.1.2,ctime=${Math.floor(Date.now() / 1000)}`],
      ["name", `debian-13-template-${vmid}`],
      ["net0", "virtio=BC:24:11:00:00:01,bridge=vmbr0"],
      ["ostype", "l26"],
      ["scsi0", `${volumeId(entry, vmid, diskName)},size=${formatSize(size)}`],
      ["scsihw", "virtio-scsi-pci"],
      ["serial0", "socket"],
      ["template", "1"],
      ["vga", "serial0"],
    ]);
    writeVmConfig(root, node, vmid, config);
  });
}

function contentOf(entry: { options: [string, string | null][] }): string {
  return entry.options.find(([k]) => k === "content")?.[1] ?? "";
}

function linkIfMissing(link: string, target: string): void {
  try {
    fs.lstatSync(link);
  } catch {
    fs.symlinkSync(target, link);
  }
}
