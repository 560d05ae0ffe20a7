import { randomBytes, randomUUID } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

import { LAB_IMAGE_MAGIC, readLabImage } from "../../image/format";
import {
  diskVolume,
  findStorage,
  formatSize,
  isDiskKey,
  isFileStorage,
  listVmids,
  listVolumes,
  nextDiskName,
  parseVolumeId,
  readRunning,
  readStorageCfg,
  readToolFaults,
  readVmConfig,
  storageContent,
  storageDisabled,
  vmConfigRelPath,
  vmMaxDisk,
  vmMemoryBytes,
  volumeDir,
  volumeId,
  volumePath,
  withPveLock,
  writeRunning,
  writeVmConfig,
  type StorageCfg,
  type VmConfig,
} from "../state";
import {
  CliExit,
  die,
  out,
  paramError,
  parseArgs,
  parseVmid,
  runTool,
  toolContext,
  type OptionSpec,
  type ToolContext,
} from "./common";

/** Simulated `qm` (qemu-server 9.1): create, set, template, destroy, config, list, status, start/stop. */

const VM_OPTIONS: OptionSpec["options"] = {
  name: "string",
  memory: "string",
  balloon: "string",
  cores: "string",
  sockets: "string",
  cpu: "string",
  scsihw: "string",
  ostype: "string",
  boot: "string",
  vga: "string",
  agent: "string",
  bios: "string",
  machine: "string",
  description: "string",
  tags: "string",
  onboot: "boolean",
  protection: "boolean",
  numa: "boolean",
  kvm: "boolean",
  tablet: "boolean",
  ciuser: "string",
  cipassword: "string",
  citype: "string",
  ciupgrade: "boolean",
  sshkeys: "string",
  nameserver: "string",
  searchdomain: "string",
  efidisk0: "string",
  tpmstate0: "string",
  hotplug: "string",
  delete: "string",
  digest: "string",
  skiplock: "boolean",
  template: "boolean",
};

const VM_PATTERNS = [
  /^(ide[0-3]|sata[0-5]|scsi([12]?\d|30)|virtio(1[0-5]|\d)|unused\d+)$/,
  /^(net|serial|ipconfig|usb|hostpci|parallel|numa)\d+$/,
];

const USAGE = {
  create: "qm create <vmid> [OPTIONS]",
  set: "qm set <vmid> [OPTIONS]",
  template: "qm template <vmid> [OPTIONS]",
  destroy: "qm destroy <vmid> [OPTIONS]",
  config: "qm config <vmid> [OPTIONS]",
  list: "qm list  [OPTIONS]",
  status: "qm status <vmid> [OPTIONS]",
  start: "qm start <vmid> [OPTIONS]",
  stop: "qm stop <vmid> [OPTIONS]",
  shutdown: "qm shutdown <vmid> [OPTIONS]",
};

function missing(ctx: ToolContext, vmid: number): never {
  die(`Configuration file '${vmConfigRelPath(ctx.node, vmid)}' does not exist`);
}

function main(): void {
  const ctx = toolContext("qm");
  const [command, ...rest] = process.argv.slice(2);
  switch (command) {
    case "create":
      return create(ctx, rest);
    case "set":
      return set(ctx, rest);
    case "template":
      return template(ctx, rest);
    case "destroy":
      return destroy(ctx, rest);
    case "config":
      return config(ctx, rest);
    case "list":
      return list(ctx, rest);
    case "status":
      return status(ctx, rest);
    case "start":
    case "stop":
    case "shutdown":
      return power(ctx, command, rest);
    case undefined:
    case "help":
      out(`USAGE: qm <COMMAND> [ARGS] [OPTIONS]\n\n${Object.values(USAGE).join("\n")}\n`);
      return;
    default:
      throw new CliExit(255, `unknown command 'qm ${command}'\n`);
  }
}

/** The node whose `qemu-server` or `lxc` folder in pmxcfs holds `vmid`, if any. */
function vmidHolder(root: string, vmid: number): string | null {
  const nodes = path.join(root, "etc/pve/nodes");
  let names: string[];
  try {
    names = fs.readdirSync(nodes);
  } catch {
    return null;
  }
  for (const node of names) {
    for (const kind of ["qemu-server", "lxc"]) {
      if (fs.existsSync(path.join(nodes, node, kind, `${vmid}.conf`))) return node;
    }
  }
  return null;
}

function create(ctx: ToolContext, argv: string[]): void {
  const args = parseArgs(argv, {
    options: {
      ...VM_OPTIONS,
      storage: "string",
      start: "boolean",
      pool: "string",
      unique: "boolean",
    },
    patterns: VM_PATTERNS,
    usage: USAGE.create,
  });
  const vmid = parseVmid(args.positional[0], USAGE.create);
  withPveLock(ctx.root, () => {
    // A VMID is the cluster's (pmxcfs' .vmlist): on a member every node's guests count.
    const holder =
      vmidHolder(ctx.root, vmid) ??
      (listVmids(ctx.root, ctx.node).includes(vmid) ? ctx.node : null);
    if (holder !== null) {
      die(`unable to create VM ${vmid} - VM ${vmid} already exists on node '${holder}'`);
    }
    const conf: VmConfig = new Map([
      ["meta", `creation-qemu=10.1.2,ctime=${Math.floor(Date.now() / 1000)}`],
      ["smbios1", `uuid=${randomUUID()}`],
      ["vmgenid", randomUUID()],
    ]);
    applyOptions(ctx, vmid, conf, args.options, USAGE.create, true);
    writeVmConfig(ctx.root, ctx.node, vmid, conf);
  });
}

function set(ctx: ToolContext, argv: string[]): void {
  const args = parseArgs(argv, { options: VM_OPTIONS, patterns: VM_PATTERNS, usage: USAGE.set });
  const vmid = parseVmid(args.positional[0], USAGE.set);
  withPveLock(ctx.root, () => {
    const conf = readVmConfig(ctx.root, ctx.node, vmid) ?? missing(ctx, vmid);
    applyOptions(ctx, vmid, conf, args.options, USAGE.set, false);
    writeVmConfig(ctx.root, ctx.node, vmid, conf);
  });
}

/** Applies `qm create/set` options; disk options allocate or import volumes. */
function applyOptions(
  ctx: ToolContext,
  vmid: number,
  conf: VmConfig,
  options: Map<string, string>,
  usage: string,
  creating: boolean,
): void {
  const storages = readStorageCfg(ctx.root);
  for (const key of (options.get("delete") ?? "").split(/[,;\s]+/).filter(Boolean)) {
    const value = conf.get(key);
    conf.delete(key);
    const volid = value === undefined || !isDiskKey(key) ? null : diskVolume(value);
    if (volid !== null && !key.startsWith("unused")) {
      let n = 0;
      while (conf.has(`unused${n}`)) n++;
      conf.set(`unused${n}`, volid);
    }
  }
  for (const [key, value] of options) {
    if (["delete", "digest", "skiplock", "storage", "start", "pool", "unique"].includes(key))
      continue;
    if (isDiskKey(key) || key === "efidisk0" || key === "tpmstate0") {
      conf.set(key, allocateDisk(ctx, storages, vmid, key, value, usage));
    } else if (/^net\d+$/.test(key)) {
      conf.set(key, withMac(value));
    } else if (key === "memory" && !/^\d+$/.test(value)) {
      paramError({ memory: `type check ('integer') failed - got '${value}'` }, usage);
    } else {
      conf.set(key, value);
    }
  }
  if (creating && !conf.has("name")) conf.set("name", `VM${vmid}`);
}

/** `virtio,bridge=vmbr0` → `virtio=BC:24:11:xx:xx:xx,bridge=vmbr0` (Proxmox's OUI), as qm does. */
function withMac(value: string): string {
  const [model = "", ...rest] = value.split(",");
  if (model.includes("=")) return value;
  const mac = ["BC", "24", "11", ...randomBytes(3).toString("hex").toUpperCase().match(/../g)!];
  return [`${model}=${mac.join(":")}`, ...rest].join(",");
}

/** `<st>:0,import-from=<path>[,format=…]`, `<st>:<GiB>`, `<st>:cloudinit`, or an existing volume. */
function allocateDisk(
  ctx: ToolContext,
  storages: StorageCfg,
  vmid: number,
  key: string,
  value: string,
  usage: string,
): string {
  const [volume = "", ...rest] = value.split(",");
  const opts = new Map(
    rest.map((o) => {
      const i = o.indexOf("=");
      return i < 0 ? ([o, ""] as const) : ([o.slice(0, i), o.slice(i + 1)] as const);
    }),
  );
  const alloc = /^([a-zA-Z][\w.-]*):(\d+(?:\.\d+)?|cloudinit)$/.exec(volume);
  if (!alloc) return value; // an existing volume, `none`, `cdrom`, `local:iso/x.iso,media=cdrom`
  const storeid = alloc[1]!;
  const entry = findStorage(storages, storeid);
  if (!entry) paramError({ [key]: `storage '${storeid}' does not exist` }, usage);
  if (storageDisabled(entry)) die(`storage '${storeid}' is disabled`);
  if (!storageContent(entry).includes("images")) {
    paramError({ storage: `storage '${storeid}' does not support vm images` }, usage);
  }
  const requested = opts.get("format");
  const format = requested === "qcow2" ? "qcow2" : requested === "raw" ? "raw" : null;
  const dir = volumeDir(ctx.root, entry, vmid);
  fs.mkdirSync(dir, { recursive: true });

  if (alloc[2] === "cloudinit") {
    const name = `vm-${vmid}-cloudinit${isFileStorage(entry) ? ".qcow2" : ""}`;
    if (listVolumes(ctx.root, entry, vmid).includes(name)) {
      die(`${key}: cloud-init drive already exists (${volumeId(entry, vmid, name)})`);
    }
    fs.writeFileSync(volumePath(ctx.root, entry, vmid, name), "");
    const volid = volumeId(entry, vmid, name);
    if (isFileStorage(entry)) {
      out(
        `Formatting '${path.join(storagePathOf(entry), "images", String(vmid), name)}', fmt=qcow2 cluster_size=65536 extended_l2=off preallocation=metadata compression_type=zlib size=4194304 lazy_refcounts=off refcount_bits=16\n`,
      );
    }
    out(`${key}: successfully created disk '${volid},media=cdrom'\n`);
    return `${volid},media=cdrom`;
  }

  const importFrom = opts.get("import-from");
  opts.delete("import-from");
  opts.delete("format");
  const name = nextDiskName(ctx.root, entry, vmid, isFileStorage(entry) ? format : null);
  const target = volumePath(ctx.root, entry, vmid, name);
  let size: number;
  if (importFrom !== undefined) {
    if (!importFrom.startsWith("/")) {
      paramError(
        { [key]: `invalid format - import-from: '${importFrom}' is not an absolute path` },
        usage,
      );
    }
    // The node's own path: the tool server resolves it in the node's view (/tmp is the node's).
    const source = importFrom;
    // PVE::Storage::abs_filesystem_path: a regular file (or a block device), else this.
    if (!fs.existsSync(source) || !fs.statSync(source).isFile()) {
      die(`can't find file '${importFrom}'`);
    }
    size = virtualSize(source, key, importFrom);
    fs.copyFileSync(source, target);
    out(`transferred 0.0 B of ${humanSize(size)} (0.00%)\n`);
    out(`transferred ${humanSize(size)} of ${humanSize(size)} (100.00%)\n`);
  } else {
    size = Math.round(Number(alloc[2]) * 1024 ** 3);
    fs.writeFileSync(target, "");
    fs.truncateSync(target, size);
  }
  if (!isFileStorage(entry)) {
    if (entry.type === "lvmthin") out(`  Logical volume "${name}" created.\n`);
  }
  const volid = volumeId(entry, vmid, name);
  const extra = [...opts]
    .filter(([k]) => k !== "size")
    .map(([k, v]) => (v === "" ? k : `${k}=${v}`));
  const result = [volid, ...extra, `size=${formatSize(size)}`].join(",");
  out(`${key}: successfully created disk '${result}'\n`);
  return result;
}

function storagePathOf(entry: { options: [string, string | null][] }): string {
  return entry.options.find(([k]) => k === "path")?.[1] ?? "/var/lib/vz";
}

/**
 * The virtual size of an image to import: the lab image format's (lab/image/format.ts; a
 * corrupt or cut-off lab image is refused like qemu-img refuses a broken qcow2), a real qcow2's
 * header, or the file size (raw).
 */
function virtualSize(file: string, key: string, shown: string): number {
  const fd = fs.openSync(file, "r");
  const header = Buffer.alloc(32);
  let read = 0;
  try {
    read = fs.readSync(fd, header, 0, 32, 0);
  } finally {
    fs.closeSync(fd);
  }
  if (header.subarray(0, LAB_IMAGE_MAGIC.length).toString("latin1") === LAB_IMAGE_MAGIC) {
    try {
      return readLabImage(file).virtualSize;
    } catch {
      die(
        `${key}: importing disk '${shown}' failed: qemu-img: Could not open '${shown}': Image is corrupt; cannot be opened read/write`,
      );
    }
  }
  if (read >= 32 && header.readUInt32BE(0) === 0x514649fb) {
    return Number(header.readBigUInt64BE(24));
  }
  return fs.statSync(file).size;
}

function humanSize(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = bytes;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(1)} ${units[i]}`;
}

function template(ctx: ToolContext, argv: string[]): void {
  const args = parseArgs(argv, { options: { disk: "string" }, usage: USAGE.template });
  const vmid = parseVmid(args.positional[0], USAGE.template);
  // Step 1, as qemu-server does: the flag is written first, under the config lock.
  const conf = withPveLock(ctx.root, () => {
    const c = readVmConfig(ctx.root, ctx.node, vmid) ?? missing(ctx, vmid);
    if (c.get("template") === "1") die("you can't convert a template to a template");
    if (readRunning(ctx.root).has(vmid)) die("you can't convert a VM to template if VM is running");
    c.set("template", "1");
    writeVmConfig(ctx.root, ctx.node, vmid, c);
    return c;
  });
  if (readToolFaults(ctx.root).templateConversionFails) {
    // The conversion "fails" after the flag: disks stay `vm-…`, and qm still exits 0.
    return;
  }
  // Step 2: every disk (not the cloud-init drive, not CD-ROMs) becomes a base volume.
  withPveLock(ctx.root, () => {
    const storages = readStorageCfg(ctx.root);
    const current = readVmConfig(ctx.root, ctx.node, vmid) ?? conf;
    for (const [key, value] of current) {
      if (!isDiskKey(key) || value.includes("media=cdrom")) continue;
      const volid = diskVolume(value);
      const parsed = volid === null ? null : parseVolumeId(volid);
      if (!parsed || !/^vm-\d+-disk-\d+/.test(parsed.name)) continue;
      const entry = findStorage(storages, parsed.storage);
      if (!entry) continue;
      const baseName = parsed.name.replace(/^vm-/, "base-");
      fs.renameSync(
        volumePath(ctx.root, entry, vmid, parsed.name),
        volumePath(ctx.root, entry, vmid, baseName),
      );
      if (entry.type === "lvmthin") {
        out(`  Renamed "${parsed.name}" to "${baseName}" in volume group "pve"\n`);
        out(`  Logical volume pve/${baseName} changed.\n`);
      }
      current.set(key, value.replace(volid!, volumeId(entry, vmid, baseName)));
    }
    writeVmConfig(ctx.root, ctx.node, vmid, current);
  });
}

function destroy(ctx: ToolContext, argv: string[]): void {
  const args = parseArgs(argv, {
    options: { purge: "boolean", "destroy-unreferenced-disks": "boolean", skiplock: "boolean" },
    usage: USAGE.destroy,
  });
  const vmid = parseVmid(args.positional[0], USAGE.destroy);
  withPveLock(ctx.root, () => {
    const conf = readVmConfig(ctx.root, ctx.node, vmid) ?? missing(ctx, vmid);
    if (conf.get("protection") === "1") die(`can't remove VM ${vmid} - protection mode enabled`);
    const running = readRunning(ctx.root);
    if (running.has(vmid)) die(`VM ${vmid} is running - destroy failed`);
    const storages = readStorageCfg(ctx.root);
    // A base volume with linked clones cannot go.
    for (const other of listVmids(ctx.root, ctx.node)) {
      if (other === vmid) continue;
      const text = [...(readVmConfig(ctx.root, ctx.node, other)?.values() ?? [])].join("\n");
      const m = new RegExp(`([\\w.-]+:(?:${vmid}/)?base-${vmid}-disk-\\d+(?:\\.\\w+)?)/`).exec(
        text,
      );
      if (m) die(`base volume '${m[1]}' is still in use by linked cloned`);
    }
    for (const entry of storages.storages) {
      for (const name of listVolumes(ctx.root, entry, vmid)) {
        fs.rmSync(volumePath(ctx.root, entry, vmid, name), { force: true });
        if (entry.type === "lvmthin") out(`  Logical volume "${name}" successfully removed.\n`);
      }
      if (isFileStorage(entry)) {
        fs.rmSync(volumeDir(ctx.root, entry, vmid), { recursive: true, force: true });
      }
    }
    fs.rmSync(path.join(ctx.root, "etc/pve/nodes", ctx.node, "qemu-server", `${vmid}.conf`));
    if (args.options.get("purge") === "1") {
      // Backup, replication and HA jobs are not modelled; nothing else references the VM.
    }
  });
}

function config(ctx: ToolContext, argv: string[]): void {
  const args = parseArgs(argv, {
    options: { current: "boolean", snapshot: "string" },
    usage: USAGE.config,
  });
  const vmid = parseVmid(args.positional[0], USAGE.config);
  const conf = readVmConfig(ctx.root, ctx.node, vmid) ?? missing(ctx, vmid);
  let text = "";
  for (const key of [...conf.keys()].sort()) {
    const value = conf.get(key)!;
    text += `${key}: ${key === "description" ? value.replace(/\n/g, "\n ") : value}\n`;
  }
  out(text);
}

function list(ctx: ToolContext, argv: string[]): void {
  parseArgs(argv, { options: { full: "boolean" }, usage: USAGE.list });
  const vmids = listVmids(ctx.root, ctx.node);
  if (vmids.length === 0) return;
  const running = readRunning(ctx.root);
  const fmt = (cols: string[]) =>
    `${cols[0]!.padStart(10)} ${cols[1]!.padEnd(20)} ${cols[2]!.padEnd(10)} ${cols[3]!.padEnd(10)} ${cols[4]!.padStart(12)} ${cols[5]!.padEnd(10)}\n`;
  let text = fmt(["VMID", "NAME", "STATUS", "MEM(MB)", "BOOTDISK(GB)", "PID"]);
  for (const vmid of vmids) {
    const conf = readVmConfig(ctx.root, ctx.node, vmid);
    if (!conf) continue;
    text += fmt([
      String(vmid),
      conf.get("name") ?? `VM ${vmid}`,
      running.has(vmid) ? "running" : "stopped",
      String(vmMemoryBytes(conf) / 1024 / 1024),
      (vmMaxDisk(conf) / 1024 ** 3).toFixed(2),
      running.has(vmid) ? String(100000 + vmid) : "0",
    ]);
  }
  out(text);
}

function status(ctx: ToolContext, argv: string[]): void {
  const args = parseArgs(argv, { options: { verbose: "boolean" }, usage: USAGE.status });
  const vmid = parseVmid(args.positional[0], USAGE.status);
  if (!readVmConfig(ctx.root, ctx.node, vmid)) missing(ctx, vmid);
  out(`status: ${readRunning(ctx.root).has(vmid) ? "running" : "stopped"}\n`);
}

function power(ctx: ToolContext, command: "start" | "stop" | "shutdown", argv: string[]): void {
  const args = parseArgs(argv, {
    options: { timeout: "string", forceStop: "boolean", skiplock: "boolean" },
    usage: USAGE[command],
  });
  const vmid = parseVmid(args.positional[0], USAGE[command]);
  withPveLock(ctx.root, () => {
    const conf = readVmConfig(ctx.root, ctx.node, vmid) ?? missing(ctx, vmid);
    const running = readRunning(ctx.root);
    if (command === "start") {
      if (conf.get("template") === "1") die("you can't start a vm if it's a template");
      if (running.has(vmid)) die(`VM ${vmid} already running`);
      running.add(vmid);
    } else {
      running.delete(vmid);
    }
    writeRunning(ctx.root, running);
  });
}

runTool(main);
