import fs from "node:fs";
import path from "node:path";

import { labDir } from "../../debian/lab-state";
import { storageStatus } from "../routes";
import {
  findStorage,
  isFileStorage,
  listVmids,
  listVolumes,
  PLUGIN_CONTENT,
  readStorageCfg,
  setStorageOption,
  storageContent,
  volumeId,
  volumePath,
  withPveLock,
  writeStorageCfg,
} from "../state";
import {
  CliExit,
  die,
  out,
  paramError,
  parseArgs,
  runTool,
  toolContext,
  type ToolContext,
} from "./common";

/** Simulated `pvesm` (libpve-storage-perl 9): status, set, list, path. */

const USAGE = {
  status: "pvesm status  [OPTIONS]",
  set: "pvesm set <storage> [OPTIONS]",
  list: "pvesm list <storage> [OPTIONS]",
  path: "pvesm path <volume>",
};

const CONTENT_TYPES = ["images", "rootdir", "vztmpl", "iso", "backup", "snippets", "import"];

function main(): void {
  const ctx = toolContext("pvesm");
  const [command, ...rest] = process.argv.slice(2);
  switch (command) {
    case "status":
      return status(ctx, rest);
    case "set":
      return set(ctx, rest);
    case "list":
      return list(ctx, rest);
    case "path":
      return volumePathCmd(ctx, rest);
    case undefined:
    case "help":
      out(`USAGE: pvesm <COMMAND> [ARGS] [OPTIONS]\n\n${Object.values(USAGE).join("\n")}\n`);
      return;
    default:
      throw new CliExit(255, `unknown command 'pvesm ${command}'\n`);
  }
}

function status(ctx: ToolContext, argv: string[]): void {
  const args = parseArgs(argv, {
    options: {
      content: "string",
      enabled: "boolean",
      format: "boolean",
      storage: "string",
      target: "string",
    },
    usage: USAGE.status,
  });
  const content = args.options.get("content");
  if (content !== undefined && !CONTENT_TYPES.includes(content)) {
    paramError({ content: `invalid format - invalid content type '${content}'` }, USAGE.status);
  }
  const rows = storageStatus(ctx.root, ctx.node, {
    content,
    storage: args.options.get("storage"),
    enabled: args.options.get("enabled") === "1",
  });
  const width = Math.max(4, ...rows.map((r) => r.storage.length));
  let text = `${"Name".padEnd(width)} ${"Type".padStart(10)} ${"Status".padStart(10)} ${"Total".padStart(15)} ${"Used".padStart(15)} ${"Available".padStart(15)} ${"%".padStart(8)}\n`;
  for (const r of rows) {
    const pct = r.total > 0 ? ((r.used / r.total) * 100).toFixed(2) : "0.00";
    text += `${r.storage.padEnd(width)} ${r.type.padStart(10)} ${(r.active ? "active" : r.enabled ? "inactive" : "disabled").padStart(10)} ${String(Math.floor(r.total / 1024)).padStart(15)} ${String(Math.floor(r.used / 1024)).padStart(15)} ${String(Math.floor(r.avail / 1024)).padStart(15)} ${`${pct}%`.padStart(8)}\n`;
  }
  out(text);
}

function set(ctx: ToolContext, argv: string[]): void {
  const args = parseArgs(argv, {
    options: {
      content: "string",
      disable: "boolean",
      shared: "boolean",
      "prune-backups": "string",
      nodes: "string",
      format: "string",
      sparse: "boolean",
      delete: "string",
      digest: "string",
    },
    usage: USAGE.set,
  });
  const storeid = args.positional[0];
  if (storeid === undefined) throw new CliExit(255, `400 not enough arguments\n${USAGE.set}\n`);
  withPveLock(ctx.root, () => {
    const cfg = readStorageCfg(ctx.root);
    const entry = findStorage(cfg, storeid);
    if (!entry) die(`update storage failed: storage '${storeid}' does not exist`);
    for (const [key, value] of args.options) {
      if (key === "digest") continue;
      if (key === "delete") {
        const drop = new Set(value.split(/[,;\s]+/));
        entry.options = entry.options.filter(([k]) => !drop.has(k));
        continue;
      }
      if (key === "content") {
        // The list is REPLACED; types the plugin does not support are dropped with a warning.
        const supported = PLUGIN_CONTENT[entry.type] ?? CONTENT_TYPES;
        const kept: string[] = [];
        for (const c of value.split(/[,;\s]+/).filter(Boolean)) {
          if (c === "none") continue;
          if (!supported.includes(c)) {
            process.stderr.write(
              `WARN: storage '${storeid}' does not support content type '${c}' - ignoring\n`,
            );
            continue;
          }
          if (!kept.includes(c)) kept.push(c);
        }
        setStorageOption(entry, "content", kept.length > 0 ? kept.join(",") : "none");
        continue;
      }
      if (key === "disable" || key === "sparse" || key === "shared") {
        if (value === "1") setStorageOption(entry, key, key === "shared" ? "1" : null);
        else entry.options = entry.options.filter(([k]) => k !== key);
        continue;
      }
      setStorageOption(entry, key, value);
    }
    writeStorageCfg(ctx.root, cfg);
  });
}

function list(ctx: ToolContext, argv: string[]): void {
  const args = parseArgs(argv, {
    options: { content: "string", vmid: "string" },
    usage: USAGE.list,
  });
  const storeid = args.positional[0];
  if (storeid === undefined) throw new CliExit(255, `400 not enough arguments\n${USAGE.list}\n`);
  const cfg = readStorageCfg(ctx.root);
  const entry = findStorage(cfg, storeid);
  if (!entry) die(`storage '${storeid}' does not exist`);
  const rows: string[][] = [];
  const vmids = args.options.has("vmid")
    ? [Number(args.options.get("vmid"))]
    : listVmidsOnStorage(ctx, entry);
  if (storageContent(entry).includes("images")) {
    for (const vmid of vmids) {
      for (const name of listVolumes(ctx.root, entry, vmid)) {
        const format = isFileStorage(entry) ? (name.split(".").pop() ?? "raw") : "raw";
        const size = fs.statSync(volumePath(ctx.root, entry, vmid, name)).size;
        rows.push([volumeId(entry, vmid, name), format, "images", String(size), String(vmid)]);
      }
    }
  }
  const w = Math.max(5, ...rows.map((r) => r[0]!.length));
  let text = `${"Volid".padEnd(w)} ${"Format".padEnd(6)}  ${"Type".padEnd(8)} ${"Size".padStart(15)} VMID\n`;
  for (const r of rows) {
    text += `${r[0]!.padEnd(w)} ${r[1]!.padEnd(6)}  ${r[2]!.padEnd(8)} ${r[3]!.padStart(15)} ${r[4]}\n`;
  }
  out(text);
}

function listVmidsOnStorage(ctx: ToolContext, entry: Parameters<typeof listVolumes>[1]): number[] {
  const ids = new Set(listVmids(ctx.root, ctx.node));
  if (isFileStorage(entry)) {
    const base = entry.options.find(([k]) => k === "path")?.[1] ?? `/mnt/pve/${entry.id}`;
    try {
      for (const d of fs.readdirSync(`${ctx.root}${base}/images`))
        if (/^\d+$/.test(d)) ids.add(Number(d));
    } catch {
      // no images folder
    }
  } else {
    try {
      for (const n of fs.readdirSync(path.join(labDir(ctx.root), "volumes", entry.id))) {
        const m = /^(?:vm|base)-(\d+)-/.exec(n);
        if (m) ids.add(Number(m[1]));
      }
    } catch {
      // no volumes yet
    }
  }
  return [...ids].sort((a, b) => a - b);
}

function volumePathCmd(ctx: ToolContext, argv: string[]): void {
  const volid = argv[0];
  if (volid === undefined) throw new CliExit(255, `400 not enough arguments\n${USAGE.path}\n`);
  const cfg = readStorageCfg(ctx.root);
  const m = /^([^:]+):(?:(\d+)\/)?(.+)$/.exec(volid);
  if (!m) die(`unable to parse volume ID '${volid}'`);
  const entry = findStorage(cfg, m[1]!);
  if (!entry) die(`storage '${m[1]}' does not exist`);
  const name = m[3]!;
  const vmid = Number(m[2] ?? /-(\d+)-/.exec(name)?.[1] ?? 0);
  if (isFileStorage(entry)) {
    const base = entry.options.find(([k]) => k === "path")?.[1] ?? `/mnt/pve/${entry.id}`;
    out(`${base}/images/${vmid}/${name}\n`);
  } else if (entry.type === "lvmthin") {
    const vg = entry.options.find(([k]) => k === "vgname")?.[1] ?? "pve";
    out(`/dev/${vg}/${name}\n`);
  } else {
    const pool = entry.options.find(([k]) => k === "pool")?.[1] ?? "rpool/data";
    out(`/dev/zvol/${pool}/${name}\n`);
  }
}

runTool(main);
