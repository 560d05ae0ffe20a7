import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

import { labDir } from "../debian/lab-state";

/**
 * The simulated Proxmox VE node's state, kept on disk under the lab root (the host's "/") in
 * the real files' formats, so the simulated tools (separate processes) and the simulated API
 * read and write one truth:
 *
 * - `etc/pve/storage.cfg` — `<type>: <id>` blocks with tab-indented `<key> <value>` lines;
 * - `etc/pve/nodes/<node>/qemu-server/<vmid>.conf` — `key: value` lines, keys sorted;
 *   `etc/pve/qemu-server` is a symlink to the local node's folder, as pmxcfs has it;
 * - `etc/pve/user.cfg` — `user:`, `token:`, `role:`, `acl:` lines; `etc/pve/priv/token.cfg`
 *   holds the token secrets (`<tokenid> <uuid>`);
 * - volumes as files: directory storages `<path>/images/<vmid>/<name>`, block storages
 *   (LVM-thin, ZFS) in the lab-private `.lab/volumes/<storage>/<name>`;
 * - `.lab/pve/running` — VMIDs the lab considers running (one per line).
 *
 * Every write is atomic (temp file + rename); multi-file changes hold `.lab/pve.lock`.
 */

// ---------------------------------------------------------------------------------------------
// Files, atomic writes, lock

export function pveDir(root: string): string {
  return path.join(root, "etc/pve");
}

export function storageCfgPath(root: string): string {
  return path.join(root, "etc/pve/storage.cfg");
}

export function userCfgPath(root: string): string {
  return path.join(root, "etc/pve/user.cfg");
}

export function tokenCfgPath(root: string): string {
  return path.join(root, "etc/pve/priv/token.cfg");
}

export function qemuServerDir(root: string, node: string): string {
  return path.join(root, "etc/pve/nodes", node, "qemu-server");
}

export function vmConfigPath(root: string, node: string, vmid: number): string {
  return path.join(qemuServerDir(root, node), `${vmid}.conf`);
}

/** Path as Proxmox names it in messages: `nodes/<node>/qemu-server/<vmid>.conf`. */
export function vmConfigRelPath(node: string, vmid: number): string {
  return `nodes/${node}/qemu-server/${vmid}.conf`;
}

function labPveDir(root: string): string {
  return path.join(labDir(root), "pve");
}

/** Writes `content` to `file` atomically (temp file in the same folder, then rename). */
export function writeAtomic(requested: string, content: string | Buffer, mode?: number): void {
  // A lab cluster node's etc/pve links each shared file to the cluster's one copy: the write
  // goes to that copy (a rename over the link would make the file the node's own).
  const file = linkTarget(requested);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.tmp.${process.pid}.${randomBytes(4).toString("hex")}`;
  fs.writeFileSync(tmp, content, mode === undefined ? {} : { mode });
  fs.renameSync(tmp, file);
}

function linkTarget(file: string): string {
  try {
    if (!fs.lstatSync(file).isSymbolicLink()) return file;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return file;
    throw error;
  }
  return path.resolve(path.dirname(file), fs.readlinkSync(file));
}

function readText(file: string): string | null {
  try {
    return fs.readFileSync(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw error;
  }
}

const sleeper = new Int32Array(new SharedArrayBuffer(4));
function sleepSync(ms: number): void {
  Atomics.wait(sleeper, 0, 0, ms);
}

/**
 * Runs `fn` holding the node state's lock file (created with O_EXCL; a lock left by a dead
 * process is taken over). Synchronous on purpose: the tools are short-lived processes.
 */
export function withPveLock<T>(root: string, fn: () => T, timeoutMs = 10_000): T {
  const lock = path.join(labDir(root), "pve.lock");
  fs.mkdirSync(path.dirname(lock), { recursive: true });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const fd = fs.openSync(lock, "wx");
      fs.writeSync(fd, `${process.pid}\n`);
      fs.closeSync(fd);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const holder = Number((readText(lock) ?? "").trim());
      if (holder > 0 && holder !== process.pid && !pidAlive(holder)) {
        fs.rmSync(lock, { force: true });
        continue;
      }
      if (Date.now() > deadline)
        throw new Error("can't lock file '/var/lock/pve-manager/pve-config.lck' - got timeout");
      sleepSync(10);
    }
  }
  try {
    return fn();
  } finally {
    fs.rmSync(lock, { force: true });
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

// ---------------------------------------------------------------------------------------------
// storage.cfg

export type StorageType = "dir" | "lvmthin" | "zfspool" | "lvm" | "nfs" | "cifs" | "btrfs" | string;

export type StorageEntry = {
  type: StorageType;
  id: string;
  /** Options in file order; `null` = a flag written without a value (`sparse`, `disable`). */
  options: [key: string, value: string | null][];
};

export type StorageCfg = {
  /** `#` comment lines found before the first block (kept on rewrite). */
  comments: string[];
  storages: StorageEntry[];
};

export function parseStorageCfg(text: string): StorageCfg {
  const cfg: StorageCfg = { comments: [], storages: [] };
  let current: StorageEntry | null = null;
  for (const raw of text.split("\n")) {
    const line = raw.replace(/\s+$/, "");
    if (line.trim() === "") continue;
    if (line.trimStart().startsWith("#")) {
      if (cfg.storages.length === 0) cfg.comments.push(line);
      continue;
    }
    const header = /^(\S+):\s*(\S+)$/.exec(line);
    if (header && !/^\s/.test(raw)) {
      current = { type: header[1]!, id: header[2]!, options: [] };
      cfg.storages.push(current);
      continue;
    }
    const option = /^\s+(\S+)(?:\s+(.*))?$/.exec(line);
    if (option && current) current.options.push([option[1]!, option[2] ?? null]);
  }
  return cfg;
}

export function formatStorageCfg(cfg: StorageCfg): string {
  const blocks = cfg.storages.map(
    (s) =>
      `${s.type}: ${s.id}\n` +
      s.options.map(([k, v]) => (v === null ? `\t${k}\n` : `\t${k} ${v}\n`)).join(""),
  );
  const head = cfg.comments.length > 0 ? `${cfg.comments.join("\n")}\n` : "";
  return head + blocks.join("\n");
}

/**
 * Proxmox's built-in default when `storage.cfg` does not exist: `local` with images.
 * (A node without Proxmox installed has no `etc/pve` at all; callers check that first.)
 */
const DEFAULT_STORAGE_CFG =
  "dir: local\n\tpath /var/lib/vz\n\tcontent images,rootdir,vztmpl,iso,backup,snippets,import\n\tmaxfiles 0\n";

export function readStorageCfg(root: string): StorageCfg {
  return parseStorageCfg(readText(storageCfgPath(root)) ?? DEFAULT_STORAGE_CFG);
}

export function writeStorageCfg(root: string, cfg: StorageCfg): void {
  writeAtomic(storageCfgPath(root), formatStorageCfg(cfg));
}

export function storageOption(entry: StorageEntry, key: string): string | null | undefined {
  const found = entry.options.find(([k]) => k === key);
  return found === undefined ? undefined : found[1];
}

export function setStorageOption(entry: StorageEntry, key: string, value: string | null): void {
  const found = entry.options.find(([k]) => k === key);
  if (found) found[1] = value;
  else entry.options.push([key, value]);
}

export function storageContent(entry: StorageEntry): string[] {
  const content = storageOption(entry, "content");
  if (content === undefined || content === null) return defaultContent(entry.type);
  return content.split(",").filter((c) => c !== "" && c !== "none");
}

export function storageDisabled(entry: StorageEntry): boolean {
  const value = storageOption(entry, "disable");
  return value === null || value === "1";
}

/** Content types each storage plugin supports (pve-storage plugin `plugindata`). */
export const PLUGIN_CONTENT: Record<string, string[]> = {
  dir: ["images", "rootdir", "vztmpl", "iso", "backup", "snippets", "import"],
  btrfs: ["images", "rootdir", "vztmpl", "iso", "backup", "snippets", "import"],
  nfs: ["images", "rootdir", "vztmpl", "iso", "backup", "snippets", "import"],
  cifs: ["images", "rootdir", "vztmpl", "iso", "backup", "snippets", "import"],
  lvmthin: ["images", "rootdir"],
  lvm: ["images", "rootdir"],
  zfspool: ["images", "rootdir"],
};

function defaultContent(type: string): string[] {
  if (type === "dir" || type === "btrfs" || type === "nfs" || type === "cifs")
    return ["images", "rootdir"];
  return ["images", "rootdir"];
}

/**
 * Storage types every node reaches: pve-storage's `@SHARED_STORAGE`, which its config parser
 * reports `shared 1` whatever the file says.
 */
const SHARED_TYPES = [
  "iscsi",
  "nfs",
  "cifs",
  "rbd",
  "cephfs",
  "iscsidirect",
  "glusterfs",
  "zfs",
  "drbd",
  "pbs",
];

export function storageShared(entry: StorageEntry): boolean {
  return SHARED_TYPES.includes(entry.type) || storageOption(entry, "shared") === "1";
}

export function isFileStorage(entry: StorageEntry): boolean {
  return ["dir", "btrfs", "nfs", "cifs"].includes(entry.type);
}

export function findStorage(cfg: StorageCfg, id: string): StorageEntry | undefined {
  return cfg.storages.find((s) => s.id === id);
}

// ---------------------------------------------------------------------------------------------
// Volumes

/** Host path of the folder holding a storage's volumes of one VM (created on demand). */
export function volumeDir(root: string, entry: StorageEntry, vmid: number): string {
  if (isFileStorage(entry)) {
    const base = storageOption(entry, "path") ?? `/mnt/pve/${entry.id}`;
    return path.join(root, base, "images", String(vmid));
  }
  return path.join(labDir(root), "volumes", entry.id);
}

/** `local:9000/vm-9000-disk-0.raw` → storage `local`, name `vm-9000-disk-0.raw`, vmid 9000. */
export function parseVolumeId(
  volid: string,
): { storage: string; name: string; vmid: number | null } | null {
  const match = /^([a-zA-Z][\w.-]*):(?:(\d+)\/)?([^,/]+)$/.exec(volid);
  if (!match) return null;
  const name = match[3]!;
  const owner = /^(?:vm|base)-(\d+)-/.exec(name);
  const vmid = match[2] !== undefined ? Number(match[2]) : owner ? Number(owner[1]) : null;
  return { storage: match[1]!, name, vmid };
}

export function volumeId(entry: StorageEntry, vmid: number, name: string): string {
  return isFileStorage(entry) ? `${entry.id}:${vmid}/${name}` : `${entry.id}:${name}`;
}

export function volumePath(root: string, entry: StorageEntry, vmid: number, name: string): string {
  return path.join(volumeDir(root, entry, vmid), name);
}

/** Host path of a volume id, or null when the storage is unknown. */
export function volumeIdPath(root: string, cfg: StorageCfg, volid: string): string | null {
  const parsed = parseVolumeId(volid);
  if (!parsed) return null;
  const entry = findStorage(cfg, parsed.storage);
  if (!entry) return null;
  return volumePath(root, entry, parsed.vmid ?? 0, parsed.name);
}

/** Names of a VM's volumes on one storage (`vm-…`/`base-…`). */
export function listVolumes(root: string, entry: StorageEntry, vmid: number): string[] {
  const dir = volumeDir(root, entry, vmid);
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return [];
  }
  const re = new RegExp(`^(?:vm|base)-${vmid}-`);
  return names.filter((n) => re.test(n) && !n.includes(".tmp.")).sort();
}

/** Next free `vm-<vmid>-disk-N` name (N counts `vm-` and `base-` volumes alike). */
export function nextDiskName(
  root: string,
  entry: StorageEntry,
  vmid: number,
  format: "raw" | "qcow2" | null,
): string {
  const used = new Set<number>();
  for (const name of listVolumes(root, entry, vmid)) {
    const m = /-disk-(\d+)/.exec(name);
    if (m) used.add(Number(m[1]));
  }
  let n = 0;
  while (used.has(n)) n++;
  const suffix = isFileStorage(entry) ? `.${format ?? "raw"}` : "";
  return `vm-${vmid}-disk-${n}${suffix}`;
}

/** Proxmox's `size=` rendering (PVE::JSONSchema::format_size). */
export function formatSize(bytes: number): string {
  const K = 1024;
  if (bytes % (K * K * K * K) === 0 && bytes >= K ** 4) return `${bytes / K ** 4}T`;
  if (bytes % (K * K * K) === 0 && bytes >= K ** 3) return `${bytes / K ** 3}G`;
  if (bytes % (K * K) === 0 && bytes >= K * K) return `${bytes / (K * K)}M`;
  if (bytes % K === 0 && bytes >= K) return `${bytes / K}K`;
  return String(bytes);
}

export function parseSize(text: string): number {
  const m = /^(\d+(?:\.\d+)?)([KMGT]?)$/.exec(text);
  if (!m) return 0;
  const unit = { "": 1, K: 1024, M: 1024 ** 2, G: 1024 ** 3, T: 1024 ** 4 }[m[2]!] ?? 1;
  return Math.round(Number(m[1]) * unit);
}

// ---------------------------------------------------------------------------------------------
// VM configs

/** Keys in file order as read; written sorted like qemu-server does. */
export type VmConfig = Map<string, string>;

export function parseVmConfig(text: string): VmConfig {
  const config: VmConfig = new Map();
  const description: string[] = [];
  for (const line of text.split("\n")) {
    if (line.startsWith("[")) break; // snapshots / pending sections: not modelled
    if (line.startsWith("#")) {
      description.push(decodeURIComponent(line.slice(1)));
      continue;
    }
    const m = /^([a-z][a-z0-9_-]*):\s*(.*)$/.exec(line);
    if (m) config.set(m[1]!, m[2]!);
  }
  if (description.length > 0) config.set("description", description.join("\n"));
  return config;
}

export function formatVmConfig(config: VmConfig): string {
  let out = "";
  const description = config.get("description");
  if (description !== undefined) {
    for (const line of description.split("\n")) out += `#${line}\n`;
  }
  for (const key of [...config.keys()].sort()) {
    if (key === "description" || key === "digest") continue;
    out += `${key}: ${config.get(key)}\n`;
  }
  return out;
}

export function readVmConfig(root: string, node: string, vmid: number): VmConfig | null {
  const text = readText(vmConfigPath(root, node, vmid));
  return text === null ? null : parseVmConfig(text);
}

export function readVmConfigText(root: string, node: string, vmid: number): string | null {
  return readText(vmConfigPath(root, node, vmid));
}

export function writeVmConfig(root: string, node: string, vmid: number, config: VmConfig): void {
  writeAtomic(vmConfigPath(root, node, vmid), formatVmConfig(config));
}

export function listVmids(root: string, node: string): number[] {
  let names: string[];
  try {
    names = fs.readdirSync(qemuServerDir(root, node));
  } catch {
    return [];
  }
  return names
    .map((n) => /^(\d+)\.conf$/.exec(n))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]))
    .sort((a, b) => a - b);
}

/** Disk keys qemu-server knows (`ide0-3`, `sata0-5`, `scsi0-30`, `virtio0-15`, `efidisk0`, `tpmstate0`, `unusedN`). */
export function isDiskKey(key: string): boolean {
  return /^(ide[0-3]|sata[0-5]|scsi([12]?\d|30)|virtio(1[0-5]|\d)|efidisk0|tpmstate0|unused\d+)$/.test(
    key,
  );
}

/** The volume id of a disk value (`local:9000/vm-9000-disk-0.raw,size=3G` → the id), or null. */
export function diskVolume(value: string): string | null {
  const first = value.split(",")[0] ?? "";
  if (first === "none" || first === "cdrom" || first.startsWith("/")) return null;
  return first.includes(":") ? first : null;
}

export function vmMemoryBytes(config: VmConfig): number {
  return Number(config.get("memory") ?? "512") * 1024 * 1024;
}

/** Size of the boot disk (first disk of `boot: order=…`, else the first disk key). */
export function vmMaxDisk(config: VmConfig): number {
  const order = /order=([^,]+)/.exec(config.get("boot") ?? "")?.[1]?.split(";") ?? [];
  const keys = [...order, ...[...config.keys()].filter(isDiskKey)];
  for (const key of keys) {
    const value = config.get(key);
    if (value === undefined || value.includes("media=cdrom")) continue;
    const size = /(?:^|,)size=([^,]+)/.exec(value)?.[1];
    if (size) return parseSize(size);
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Running VMs (lab-private)

export function readRunning(root: string): Set<number> {
  const text = readText(path.join(labPveDir(root), "running")) ?? "";
  return new Set(
    text
      .split("\n")
      .filter((l) => /^\d+$/.test(l))
      .map(Number),
  );
}

/**
 * Every guest start the node's API took, in order (`<vmid>` per line): the evidence of the
 * order a way back started them in. Lab-private, like `running`.
 */
export function readGuestStarts(root: string): number[] {
  const text = readText(path.join(labPveDir(root), "guest-starts")) ?? "";
  return text
    .split("\n")
    .filter((l) => /^\d+$/.test(l))
    .map(Number);
}

export function appendGuestStart(root: string, vmid: number): void {
  fs.mkdirSync(labPveDir(root), { recursive: true });
  fs.appendFileSync(path.join(labPveDir(root), "guest-starts"), `${vmid}\n`);
}

/** The node went down (powered off, or rebooting): no guest of it runs any more. */
export function stopGuestsAtPowerOff(root: string): void {
  withPveLock(root, () => writeRunning(root, new Set()));
}

/**
 * The node booted: Proxmox's pve-guests.service starts the guests with `onboot: 1`; the others
 * stay stopped until someone starts them.
 */
export function startOnbootGuests(root: string, node: string): void {
  withPveLock(root, () => {
    const onboot = listVmids(root, node).filter(
      (vmid) => readVmConfig(root, node, vmid)?.get("onboot") === "1",
    );
    writeRunning(root, new Set(onboot));
  });
}

export function writeRunning(root: string, running: Set<number>): void {
  writeAtomic(
    path.join(labPveDir(root), "running"),
    [...running]
      .sort((a, b) => a - b)
      .map((id) => `${id}\n`)
      .join(""),
  );
}

// ---------------------------------------------------------------------------------------------
// Lab switches read by the tools (written by tests / the control API)

export type PveToolFaults = {
  /** `qm template` writes `template: 1`, then "fails" to convert the disks and still exits 0. */
  templateConversionFails?: boolean;
  /**
   * pve-cluster (pmxcfs) is down: `pveum` cannot reach it and dies as the real one does, so
   * nothing about users or tokens can be read or changed.
   */
  clusterFsDown?: boolean;
  /**
   * `pvecm add` dies once the member has added the node to its nodelist, before the node took
   * the cluster's configuration: the half-joined state (lab/pve/cluster/pvecm-ops.ts).
   */
  clusterJoinDiesHalfWay?: boolean;
};

export function toolFaultsPath(root: string): string {
  return path.join(labPveDir(root), "faults.json");
}

export function readToolFaults(root: string): PveToolFaults {
  const text = readText(toolFaultsPath(root));
  if (text === null) return {};
  try {
    return JSON.parse(text) as PveToolFaults;
  } catch {
    return {};
  }
}

export function writeToolFaults(root: string, faults: PveToolFaults): void {
  writeAtomic(toolFaultsPath(root), `${JSON.stringify(faults)}\n`);
}

// ---------------------------------------------------------------------------------------------
// Node identity

/** The node name: `etc/hostname` (first label), as pve-cluster derives it. */
export function nodeName(root: string): string {
  const text = readText(path.join(root, "etc/hostname")) ?? "localhost\n";
  return (text.split("\n")[0] ?? "localhost").trim().split(".")[0] || "localhost";
}

/** True once pmxcfs is "up": `etc/pve` exists (created by seeding or on first use after install). */
export function pveInstalled(root: string): boolean {
  return fs.existsSync(path.join(root, "etc/pve"));
}
