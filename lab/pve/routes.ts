import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import { readInstalled } from "../debian/dpkg-status";
import { labDir } from "../debian/lab-state";
import { requestPower } from "../debian/power";
import { effectivePrivs, hasPriv, permissionPaths, readUserCfg, type UserCfg } from "./access";
import { PVE_VERSION } from "./seed";
import { joinInfo } from "./cluster/join-info";
import { getSubscription, LAB_KEY_PATTERN, setSubscription } from "./subscription";
import { clusterView } from "./cluster/membership";
import {
  appendGuestStart,
  withPveLock,
  writeRunning,
  formatStorageCfg,
  isFileStorage,
  listVmids,
  listVolumes,
  readRunning,
  parseVmConfig,
  pveDir,
  readStorageCfg,
  readVmConfig,
  readVmConfigText,
  storageContent,
  storageDisabled,
  storageOption,
  storageShared,
  vmConfigRelPath,
  vmMaxDisk,
  vmMemoryBytes,
  volumePath,
  type StorageEntry,
} from "./state";

/**
 * The simulated Proxmox VE API as data: one entry per method + path, with the parameters it
 * accepts. The HTTPS server (api.ts) and `pvesh` (tools/pvesh.ts) both dispatch through it, and
 * a test walks it against Proxmox's published schema, so the lab cannot invent endpoints.
 */

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly errors?: Record<string, string>,
  ) {
    super(message);
  }
}

export type RouteContext = {
  root: string;
  /** The node this API runs on. */
  node: string;
  /** `user@realm` or `user@realm!token`; `root@pam` for pvesh. */
  authid: string;
  /** Path parameters (`node`, `vmid`, …) and query parameters, all as strings. */
  params: Record<string, string>;
};

export type Route = {
  method: "GET" | "POST" | "PUT" | "DELETE";
  /** As in Proxmox's schema, without `/api2/json`: `/nodes/{node}/qemu`. */
  path: string;
  /** Query/body parameters besides the path's own. */
  params: string[];
  handler: (ctx: RouteContext) => unknown;
};

/** Privileges a check names; `403 Permission check failed (<path>, <priv>)` when missing. */
function requirePriv(
  ctx: RouteContext,
  cfg: UserCfg,
  target: string,
  privs: string[],
  any = false,
) {
  const held = effectivePrivs(cfg, ctx.authid, target);
  const ok = any ? privs.some((p) => held.has(p)) : privs.every((p) => held.has(p));
  if (!ok) {
    const missing = any ? privs.join("|") : privs.find((p) => !held.has(p));
    throw new ApiError(403, `Permission check failed (${target}, ${missing})`);
  }
}

const NODE_RE = /^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?$/;

/** Validates `{node}`: 400 for a malformed name, 500 (as the proxy fails) for another node. */
function checkNode(ctx: RouteContext): void {
  const node = ctx.params.node ?? "";
  if (!NODE_RE.test(node)) {
    throw new ApiError(400, "Parameter verification failed.", {
      node: "invalid format - value does not look like a valid node name",
    });
  }
  if (node !== ctx.node && node !== "localhost") {
    throw new ApiError(
      500,
      `hostname lookup '${node}' failed - failed to get address info for: ${node}: Name or service not known`,
    );
  }
}

function checkVmid(ctx: RouteContext): number {
  const text = ctx.params.vmid ?? "";
  if (!/^\d+$/.test(text)) {
    throw new ApiError(400, "Parameter verification failed.", {
      vmid: `type check ('integer') failed - got '${text}'`,
    });
  }
  const vmid = Number(text);
  if (vmid < 100 || vmid > 999_999_999) {
    throw new ApiError(400, "Parameter verification failed.", {
      vmid: `value must have a minimum value of 100`,
    });
  }
  return vmid;
}

function boolParam(ctx: RouteContext, name: string): boolean {
  const v = ctx.params[name];
  return v === "1" || v === "true" || v === "yes" || v === "on";
}

// Keys the config endpoint returns as numbers (schema types integer/boolean/number).
const NUMERIC_CONFIG_KEYS = new Set([
  "acpi",
  "allow-ksm",
  "autostart",
  "balloon",
  "ciupgrade",
  "cores",
  "cpulimit",
  "cpuunits",
  "freeze",
  "keephugepages",
  "kvm",
  "localtime",
  "migrate_downtime",
  "migrate_speed",
  "numa",
  "onboot",
  "protection",
  "reboot",
  "shares",
  "smp",
  "snaptime",
  "sockets",
  "tablet",
  "tdf",
  "template",
  "vcpus",
]);

function vmConfigJson(root: string, node: string, vmid: number): Record<string, unknown> | null {
  const text = readVmConfigText(root, node, vmid);
  return text === null ? null : configJson(text);
}

/** A guest's config file as `GET …/config` answers it (qemu-server and lxc alike). */
function configJson(text: string): Record<string, unknown> {
  const conf = parseVmConfig(text);
  const data: Record<string, unknown> = {};
  for (const [key, value] of conf) {
    data[key] =
      NUMERIC_CONFIG_KEYS.has(key) && /^-?\d+(\.\d+)?$/.test(value) ? Number(value) : value;
  }
  data.digest = createHash("sha1").update(text).digest("hex");
  return data;
}

function vmListEntry(root: string, node: string, vmid: number, running: Set<number>) {
  const conf = readVmConfig(root, node, vmid);
  if (!conf) return null;
  const isRunning = running.has(vmid);
  const entry: Record<string, unknown> = {
    vmid,
    name: conf.get("name") ?? `VM ${vmid}`,
    status: isRunning ? "running" : "stopped",
    cpus: Number(conf.get("cores") ?? 1) * Number(conf.get("sockets") ?? 1),
    maxmem: vmMemoryBytes(conf),
    maxdisk: vmMaxDisk(conf),
    mem: isRunning ? Math.floor(vmMemoryBytes(conf) / 4) : 0,
    disk: 0,
    cpu: 0,
    uptime: isRunning ? 3600 : 0,
    netin: 0,
    netout: 0,
    diskread: 0,
    diskwrite: 0,
  };
  if (isRunning) entry.pid = 100000 + vmid;
  if (conf.get("template") === "1") entry.template = 1;
  if (conf.has("lock")) entry.lock = conf.get("lock");
  if (conf.has("tags")) entry.tags = conf.get("tags");
  return entry;
}

export type StorageStatusRow = {
  storage: string;
  type: string;
  content: string;
  enabled: boolean;
  active: boolean;
  shared: boolean;
  total: number;
  used: number;
  avail: number;
};

/** What `pvesm status` and `GET /nodes/{node}/storage` report (sizes in bytes). */
export function storageStatus(
  root: string,
  node: string,
  filter: { content?: string; storage?: string; enabled?: boolean },
): StorageStatusRow[] {
  const cfg = readStorageCfg(root);
  const rows: StorageStatusRow[] = [];
  for (const entry of cfg.storages) {
    if (filter.storage !== undefined && entry.id !== filter.storage) continue;
    const nodes = storageOption(entry, "nodes");
    if (nodes && !nodes.split(",").includes(node)) continue;
    const enabled = !storageDisabled(entry);
    if (filter.enabled && !enabled) continue;
    const content = storageContent(entry);
    if (filter.content !== undefined) {
      // With a content filter Proxmox lists only enabled storages offering that content.
      if (!enabled || !filter.content.split(",").some((c) => content.includes(c))) continue;
    }
    rows.push({
      storage: entry.id,
      type: entry.type,
      content: content.join(","),
      enabled,
      active: enabled,
      shared: storageShared(entry),
      ...(enabled ? storageSpace(root, entry) : { total: 0, used: 0, avail: 0 }),
    });
  }
  return rows.sort((a, b) => a.storage.localeCompare(b.storage));
}

/** Directory storages report the lab host's real filesystem; block storages a 256 GiB pool. */
function storageSpace(
  root: string,
  entry: StorageEntry,
): { total: number; used: number; avail: number } {
  if (isFileStorage(entry)) {
    try {
      const st = fs.statfsSync(root);
      const total = st.blocks * st.bsize;
      const avail = st.bavail * st.bsize;
      return { total, avail, used: total - st.bfree * st.bsize };
    } catch {
      return { total: 0, used: 0, avail: 0 };
    }
  }
  const total = 256 * 1024 ** 3;
  let used = 0;
  const dir = path.join(labDir(root), "volumes", entry.id);
  try {
    for (const name of fs.readdirSync(dir)) used += fs.statSync(path.join(dir, name)).size;
  } catch {
    // no volumes yet
  }
  return { total, used, avail: total - used };
}

function kernel(root: string): { release: string; version: string } {
  const read = (f: string, d: string) => {
    try {
      return fs.readFileSync(path.join(labDir(root), f), "utf8").split("\n")[0] || d;
    } catch {
      return d;
    }
  };
  return { release: read("kernel", "6.17.2-1-pve"), version: read("kernel-version", "#1 SMP") };
}

function pveManagerVersion(root: string): string {
  return readInstalled(root).get("pve-manager")?.version ?? PVE_VERSION.version;
}

function versionInfo(root: string) {
  const version = pveManagerVersion(root);
  return { version, release: version.split(".").slice(0, 2).join("."), repoid: PVE_VERSION.repoid };
}

function nodeIp(root: string, node: string): string {
  try {
    const hosts = fs.readFileSync(path.join(root, "etc/hosts"), "utf8");
    for (const line of hosts.split("\n")) {
      const [ip, ...names] = line.split(/\s+/);
      if (
        ip &&
        !ip.startsWith("127.") &&
        !ip.includes(":") &&
        names.some((n) => n === node || n.startsWith(`${node}.`))
      )
        return ip;
    }
  } catch {
    // no hosts file
  }
  try {
    const interfaces = fs.readFileSync(path.join(root, "etc/network/interfaces"), "utf8");
    const address = /^\s*address\s+(\d+\.\d+\.\d+\.\d+)/m.exec(interfaces)?.[1];
    if (address) return address;
  } catch {
    // no interfaces file
  }
  return "127.0.0.1";
}

export const ROUTES: Route[] = [
  {
    method: "GET",
    path: "/version",
    params: [],
    handler: (ctx) => versionInfo(ctx.root),
  },
  {
    method: "GET",
    path: "/nodes",
    params: [],
    handler: (ctx) => {
      const cfg = readUserCfg(ctx.root);
      const entry: Record<string, unknown> = {
        node: ctx.node,
        id: `node/${ctx.node}`,
        type: "node",
        status: "online",
        level: "",
      };
      if (hasPriv(cfg, ctx.authid, `/nodes/${ctx.node}`, "Sys.Audit")) {
        Object.assign(entry, {
          cpu: 0.02,
          maxcpu: os.cpus().length,
          mem: os.totalmem() - os.freemem(),
          maxmem: os.totalmem(),
          uptime: Math.floor(os.uptime()),
        });
      }
      return [entry];
    },
  },
  {
    method: "GET",
    path: "/nodes/{node}/status",
    params: [],
    handler: (ctx) => {
      checkNode(ctx);
      requirePriv(ctx, readUserCfg(ctx.root), `/nodes/${ctx.node}`, ["Sys.Audit"]);
      const k = kernel(ctx.root);
      const cpus = os.cpus();
      let rootfs = { total: 0, used: 0, avail: 0, free: 0 };
      try {
        const st = fs.statfsSync(ctx.root);
        rootfs = {
          total: st.blocks * st.bsize,
          used: (st.blocks - st.bfree) * st.bsize,
          avail: st.bavail * st.bsize,
          free: st.bfree * st.bsize,
        };
      } catch {
        // keep zeros
      }
      return {
        cpu: 0.02,
        cpuinfo: {
          cpus: cpus.length,
          cores: cpus.length,
          sockets: 1,
          model: cpus[0]?.model ?? "QEMU Virtual CPU",
          mhz: String(cpus[0]?.speed ?? 2000),
          flags: "",
          hvm: "1",
          user_hz: 100,
        },
        memory: {
          total: os.totalmem(),
          used: os.totalmem() - os.freemem(),
          free: os.freemem(),
          available: os.freemem(),
        },
        swap: { total: 0, used: 0, free: 0 },
        rootfs,
        uptime: Math.floor(os.uptime()),
        loadavg: os.loadavg().map((l) => l.toFixed(2)),
        kversion: `Linux ${k.release} ${k.version}`,
        "current-kernel": {
          sysname: "Linux",
          release: k.release,
          version: k.version,
          machine: "x86_64",
        },
        pveversion: `pve-manager/${pveManagerVersion(ctx.root)}/${PVE_VERSION.repoid}`,
        "boot-info": { mode: "efi", secureboot: 0 },
        idle: 0,
        wait: 0,
        ksm: { shared: 0 },
      };
    },
  },
  {
    method: "POST",
    path: "/nodes/{node}/status",
    params: ["command"],
    handler: (ctx) => {
      checkNode(ctx);
      const command = ctx.params.command;
      if (command !== "shutdown" && command !== "reboot") {
        throw new ApiError(400, "Parameter verification failed.", {
          command:
            command === undefined
              ? "property is missing and it is not optional"
              : `value '${command}' does not have a value in the enumeration 'reboot, shutdown'`,
        });
      }
      requirePriv(ctx, readUserCfg(ctx.root), `/nodes/${ctx.node}`, ["Sys.PowerMgmt"]);
      // Proxmox runs `sleep 2; poweroff` (or reboot) in the background and answers at once.
      requestPower(ctx.root, command === "shutdown" ? "poweroff" : "reboot", 2000);
      return null;
    },
  },
  {
    method: "GET",
    path: "/nodes/{node}/subscription",
    params: [],
    // Everyone may read it; the key and server ID only with Sys.Audit (pve-manager).
    handler: (ctx) => {
      checkNode(ctx);
      const cfg = readUserCfg(ctx.root);
      return getSubscription(ctx.root, hasPriv(cfg, ctx.authid, `/nodes/${ctx.node}`, "Sys.Audit"));
    },
  },
  {
    method: "PUT",
    path: "/nodes/{node}/subscription",
    params: ["key"],
    handler: (ctx) => {
      checkNode(ctx);
      const key = ctx.params.key;
      if (key === undefined)
        throw new ApiError(400, "Parameter verification failed.", {
          key: "property is missing and it is not optional",
        });
      if (key.length > 32)
        throw new ApiError(400, "Parameter verification failed.", {
          key: "value may only be 32 characters long",
        });
      if (!LAB_KEY_PATTERN.test(key))
        throw new ApiError(400, "Parameter verification failed.", {
          key: "value does not match the regex pattern",
        });
      requirePriv(ctx, readUserCfg(ctx.root), `/nodes/${ctx.node}`, ["Sys.Modify"]);
      try {
        return setSubscription(ctx.root, key);
      } catch (error) {
        // pve-manager dies with check_subscription's error (e.g. no network to the shop): 500.
        throw new ApiError(500, error instanceof Error ? error.message : String(error));
      }
    },
  },
  {
    method: "GET",
    path: "/nodes/{node}/version",
    params: [],
    handler: (ctx) => {
      checkNode(ctx);
      return versionInfo(ctx.root);
    },
  },
  {
    method: "GET",
    path: "/nodes/{node}/qemu",
    params: ["full"],
    handler: (ctx) => {
      checkNode(ctx);
      const cfg = readUserCfg(ctx.root);
      const running = readRunning(ctx.root);
      return listVmids(ctx.root, ctx.node)
        .filter((vmid) => hasPriv(cfg, ctx.authid, `/vms/${vmid}`, "VM.Audit"))
        .map((vmid) => vmListEntry(ctx.root, ctx.node, vmid, running))
        .filter((e) => e !== null);
    },
  },
  {
    // A single lab node holds VMs only: its container list is empty, as on a node without any.
    method: "GET",
    path: "/nodes/{node}/lxc",
    params: [],
    handler: (ctx) => {
      checkNode(ctx);
      return [];
    },
  },
  {
    // HA is installed on every Proxmox VE node; a node outside a cluster manages nothing.
    method: "GET",
    path: "/cluster/ha/resources",
    params: ["type"],
    handler: (ctx) => {
      requirePriv(ctx, readUserCfg(ctx.root), "/", ["Sys.Audit"]);
      return [];
    },
  },
  {
    method: "GET",
    path: "/nodes/{node}/qemu/{vmid}/config",
    params: ["current", "snapshot"],
    handler: (ctx) => {
      checkNode(ctx);
      const vmid = checkVmid(ctx);
      requirePriv(ctx, readUserCfg(ctx.root), `/vms/${vmid}`, ["VM.Audit"]);
      const data = vmConfigJson(ctx.root, ctx.node, vmid);
      if (data === null) {
        throw new ApiError(
          500,
          `Configuration file '${vmConfigRelPath(ctx.node, vmid)}' does not exist`,
        );
      }
      return data;
    },
  },
  {
    // A container's config, from where pmxcfs keeps it (lab/pve/cluster writes them).
    method: "GET",
    path: "/nodes/{node}/lxc/{vmid}/config",
    params: ["current", "snapshot"],
    handler: (ctx) => {
      checkNode(ctx);
      const vmid = checkVmid(ctx);
      requirePriv(ctx, readUserCfg(ctx.root), `/vms/${vmid}`, ["VM.Audit"]);
      const rel = `nodes/${ctx.node}/lxc/${vmid}.conf`;
      let text: string;
      try {
        text = fs.readFileSync(path.join(pveDir(ctx.root), rel), "utf8");
      } catch {
        throw new ApiError(500, `Configuration file '${rel}' does not exist`);
      }
      return configJson(text);
    },
  },
  {
    method: "GET",
    path: "/nodes/{node}/qemu/{vmid}/status/current",
    params: [],
    handler: (ctx) => {
      checkNode(ctx);
      const vmid = checkVmid(ctx);
      requirePriv(ctx, readUserCfg(ctx.root), `/vms/${vmid}`, ["VM.Audit"]);
      const entry = vmListEntry(ctx.root, ctx.node, vmid, readRunning(ctx.root));
      if (entry === null) {
        throw new ApiError(
          500,
          `Configuration file '${vmConfigRelPath(ctx.node, vmid)}' does not exist`,
        );
      }
      return { ...entry, qmpstatus: entry.status, ha: { managed: 0 } };
    },
  },
  {
    // qemu-server's vm_start: VM.PowerMgmt on the guest, its config must exist on this node;
    // the start is a task (`qmstart`), its UPID the answer. One that runs already, or a
    // template, is a task that fails (nothing changes).
    method: "POST",
    path: "/nodes/{node}/qemu/{vmid}/status/start",
    params: ["skiplock", "timeout"],
    handler: (ctx) => {
      checkNode(ctx);
      const vmid = checkVmid(ctx);
      requirePriv(ctx, readUserCfg(ctx.root), `/vms/${vmid}`, ["VM.PowerMgmt"]);
      const upid = withPveLock(ctx.root, () => {
        const conf = readVmConfig(ctx.root, ctx.node, vmid);
        if (conf === null) {
          throw new ApiError(
            500,
            `Configuration file '${vmConfigRelPath(ctx.node, vmid)}' does not exist`,
          );
        }
        const running = readRunning(ctx.root);
        if (!running.has(vmid) && conf.get("template") !== "1") {
          running.add(vmid);
          writeRunning(ctx.root, running);
          appendGuestStart(ctx.root, vmid);
        }
        return labUpid(ctx.node, "qmstart", String(vmid), ctx.authid);
      });
      return upid;
    },
  },
  {
    // pve-container's vm_start: a single lab node holds no containers, so every one is missing.
    method: "POST",
    path: "/nodes/{node}/lxc/{vmid}/status/start",
    params: ["skiplock", "debug"],
    handler: (ctx) => {
      checkNode(ctx);
      const vmid = checkVmid(ctx);
      requirePriv(ctx, readUserCfg(ctx.root), `/vms/${vmid}`, ["VM.PowerMgmt"]);
      throw new ApiError(
        500,
        `Configuration file 'nodes/${ctx.node}/lxc/${vmid}.conf' does not exist`,
      );
    },
  },
  {
    method: "GET",
    path: "/nodes/{node}/storage",
    params: ["content", "storage", "enabled", "format", "target"],
    handler: (ctx) => {
      checkNode(ctx);
      const cfg = readUserCfg(ctx.root);
      return storageStatus(ctx.root, ctx.node, {
        content: ctx.params.content,
        storage: ctx.params.storage,
        enabled: boolParam(ctx, "enabled"),
      })
        .filter((row) => {
          const held = effectivePrivs(cfg, ctx.authid, `/storage/${row.storage}`);
          return held.has("Datastore.Audit") || held.has("Datastore.AllocateSpace");
        })
        .map((row) => ({
          storage: row.storage,
          type: row.type,
          content: row.content,
          active: row.active ? 1 : 0,
          enabled: row.enabled ? 1 : 0,
          shared: row.shared ? 1 : 0,
          total: row.total,
          used: row.used,
          avail: row.avail,
          used_fraction: row.total > 0 ? row.used / row.total : 0,
        }));
    },
  },
  {
    // The datacenter's storage.cfg, one entry per storage the caller may audit (others left
    // out silently, as Proxmox does); a flag written without a value reads 1.
    method: "GET",
    path: "/storage",
    params: ["type"],
    handler: (ctx) => {
      const cfg = readUserCfg(ctx.root);
      const storages = readStorageCfg(ctx.root);
      const digest = createHash("sha1").update(formatStorageCfg(storages)).digest("hex");
      return storages.storages
        .filter((entry) => ctx.params.type === undefined || entry.type === ctx.params.type)
        .filter((entry) => {
          const held = effectivePrivs(cfg, ctx.authid, `/storage/${entry.id}`);
          return held.has("Datastore.Audit") || held.has("Datastore.AllocateSpace");
        })
        .map((entry) => ({
          ...Object.fromEntries(entry.options.map(([key, value]) => [key, value ?? 1])),
          storage: entry.id,
          type: entry.type,
          content: storageContent(entry).join(","),
          // pve-storage's parser marks the types every node reaches as shared.
          ...(storageShared(entry) ? { shared: 1 } : {}),
          digest,
        }));
    },
  },
  {
    method: "GET",
    path: "/nodes/{node}/storage/{storage}/content",
    params: ["content", "vmid"],
    handler: (ctx) => {
      checkNode(ctx);
      const storeid = ctx.params.storage ?? "";
      requirePriv(
        ctx,
        readUserCfg(ctx.root),
        `/storage/${storeid}`,
        ["Datastore.Audit", "Datastore.AllocateSpace"],
        true,
      );
      const entry = readStorageCfg(ctx.root).storages.find((s) => s.id === storeid);
      if (!entry) throw new ApiError(500, `storage '${storeid}' does not exist`);
      if (ctx.params.content !== undefined && ctx.params.content !== "images") return [];
      if (!storageContent(entry).includes("images")) return [];
      const vmids =
        ctx.params.vmid !== undefined ? [Number(ctx.params.vmid)] : listVmids(ctx.root, ctx.node);
      const out: Record<string, unknown>[] = [];
      for (const vmid of vmids) {
        for (const name of listVolumes(ctx.root, entry, vmid)) {
          const file = volumePath(ctx.root, entry, vmid, name);
          const size = fs.statSync(file).size;
          out.push({
            volid: isFileStorage(entry) ? `${entry.id}:${vmid}/${name}` : `${entry.id}:${name}`,
            content: "images",
            format: isFileStorage(entry) ? (name.split(".").pop() ?? "raw") : "raw",
            size,
            used: size,
            vmid,
            ctime: Math.floor(fs.statSync(file).mtimeMs / 1000),
          });
        }
      }
      return out;
    },
  },
  {
    method: "GET",
    path: "/access/permissions",
    params: ["path", "userid"],
    handler: (ctx) => {
      const cfg = readUserCfg(ctx.root);
      let subject = ctx.authid;
      const asked = ctx.params.userid;
      if (asked !== undefined && asked !== ctx.authid) {
        // A token may ask about itself or its own user; anything else needs Sys.Audit on /access.
        const ownUser = ctx.authid.split("!")[0];
        const ownToken = asked.startsWith(`${ctx.authid}`) || asked.split("!")[0] === ownUser;
        if (!ownToken) requirePriv(ctx, cfg, "/access", ["Sys.Audit"]);
        subject = asked;
      }
      const paths = ctx.params.path !== undefined ? [ctx.params.path] : permissionPaths(cfg);
      const result: Record<string, Record<string, 0 | 1>> = {};
      for (const p of paths) {
        const privs = effectivePrivs(cfg, subject, p);
        if (privs.size === 0 && ctx.params.path === undefined) continue;
        result[p] = Object.fromEntries([...privs].sort(([a], [b]) => a.localeCompare(b)));
      }
      return result;
    },
  },
  {
    method: "GET",
    path: "/cluster/status",
    params: [],
    handler: (ctx) => {
      requirePriv(ctx, readUserCfg(ctx.root), "/", ["Sys.Audit"]);
      // A member of a cluster made with pvecm (lab/pve/cluster/membership.ts): the cluster's
      // entry and one per member, as pve-cluster's get_status lists them.
      const view = clusterView(ctx.root, ctx.node);
      if (view !== null) {
        return [
          {
            type: "cluster",
            id: "cluster",
            name: view.name,
            nodes: view.members.length,
            quorate: view.quorate ? 1 : 0,
            version: view.configVersion,
          },
          ...view.members.map((m) => ({
            type: "node",
            id: `node/${m.name}`,
            name: m.name,
            nodeid: m.nodeid,
            ip: m.ring0_addr,
            local: m.local ? 1 : 0,
            online: m.online ? 1 : 0,
            level: "",
          })),
        ];
      }
      return [
        {
          type: "node",
          id: `node/${ctx.node}`,
          name: ctx.node,
          nodeid: 0,
          ip: nodeIp(ctx.root, ctx.node),
          local: 1,
          online: 1,
          level: "",
        },
      ];
    },
  },
  {
    method: "GET",
    path: "/cluster/config/join",
    params: ["node"],
    handler: (ctx) => {
      requirePriv(ctx, readUserCfg(ctx.root), "/", ["Sys.Audit"]);
      const node = ctx.params.node;
      if (node !== undefined && !/^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?$/.test(node)) {
        throw new ApiError(400, "Parameter verification failed.", {
          node: "invalid format - value does not look like a valid node name",
        });
      }
      return joinInfo(null, ctx.root, ctx.node, node);
    },
  },
  {
    method: "GET",
    path: "/cluster/resources",
    params: ["type"],
    handler: (ctx) => {
      const type = ctx.params.type;
      if (type !== undefined && !["vm", "storage", "node", "sdn"].includes(type)) {
        throw new ApiError(400, "Parameter verification failed.", {
          type: `value '${type}' does not have a value in the enumeration 'vm, storage, node, sdn'`,
        });
      }
      const cfg = readUserCfg(ctx.root);
      const out: Record<string, unknown>[] = [];
      if (type === undefined || type === "vm") {
        const running = readRunning(ctx.root);
        // On a member of a cluster made with pvecm: every member's guests (pmxcfs shows them
        // all); only this node's run state is known here, the others' count as stopped.
        const members = clusterView(ctx.root, ctx.node)?.members.map((m) => m.name) ?? [ctx.node];
        for (const node of members) {
          for (const vmid of listVmids(ctx.root, node)) {
            if (!hasPriv(cfg, ctx.authid, `/vms/${vmid}`, "VM.Audit")) continue;
            const e = vmListEntry(ctx.root, node, vmid, node === ctx.node ? running : new Set());
            if (!e) continue;
            out.push({
              ...e,
              id: `qemu/${vmid}`,
              type: "qemu",
              node,
              template: e.template ?? 0,
            });
          }
        }
      }
      if (type === undefined || type === "node") {
        out.push({
          id: `node/${ctx.node}`,
          type: "node",
          node: ctx.node,
          status: "online",
          level: "",
        });
      }
      if (type === undefined || type === "storage") {
        for (const row of storageStatus(ctx.root, ctx.node, {})) {
          const held = effectivePrivs(cfg, ctx.authid, `/storage/${row.storage}`);
          if (!held.has("Datastore.Audit") && !held.has("Datastore.AllocateSpace")) continue;
          out.push({
            id: `storage/${ctx.node}/${row.storage}`,
            type: "storage",
            storage: row.storage,
            node: ctx.node,
            status: row.enabled ? "available" : "unknown",
            content: row.content,
            plugintype: row.type,
            shared: row.shared ? 1 : 0,
            disk: row.used,
            maxdisk: row.total,
          });
        }
      }
      return out;
    },
  },
];

/** Matches `/nodes/pve1/qemu/100/config` against the table; path parameters extracted. */
export function matchRoute(
  method: string,
  urlPath: string,
  routes: readonly Route[] = ROUTES,
): { route: Route; pathParams: Record<string, string> } | { allowed: string[] } | null {
  const parts = urlPath.split("/").filter(Boolean);
  const allowed: string[] = [];
  for (const route of routes) {
    const tparts = route.path.split("/").filter(Boolean);
    if (tparts.length !== parts.length) continue;
    const params: Record<string, string> = {};
    let ok = true;
    for (let i = 0; i < tparts.length; i++) {
      const t = tparts[i]!;
      const p = decodeURIComponent(parts[i]!);
      if (t.startsWith("{")) params[t.slice(1, -1)] = p;
      else if (t !== p) {
        ok = false;
        break;
      }
    }
    if (!ok) continue;
    if (route.method === method) return { route, pathParams: params };
    allowed.push(route.method);
  }
  return allowed.length > 0 ? { allowed } : null;
}

/**
 * Runs one request; the result is Proxmox's `data`, or an ApiError. `extraRoutes` (a lab
 * cluster's) are matched before the single-node table.
 */
export function dispatch(
  base: { root: string; node: string; authid: string },
  method: string,
  urlPath: string,
  query: Record<string, string>,
  extraRoutes: readonly Route[] = [],
): unknown {
  const match = matchRoute(method, urlPath, [...extraRoutes, ...ROUTES]);
  if (match === null) throw new ApiError(501, `Method '${method} ${urlPath}' not implemented`);
  if ("allowed" in match) throw new ApiError(501, `Method '${method} ${urlPath}' not implemented`);
  const { route, pathParams } = match;
  const unknown = Object.keys(query).filter((k) => !route.params.includes(k));
  if (unknown.length > 0) {
    throw new ApiError(
      400,
      "Parameter verification failed.",
      Object.fromEntries(
        unknown.map((k) => [
          k,
          "property is not defined in schema and the schema does not allow additional properties",
        ]),
      ),
    );
  }
  return route.handler({ ...base, params: { ...query, ...pathParams } });
}

/** A task id as Proxmox writes it: `UPID:node:pid:pstart:starttime:type:id:user:`. */
function labUpid(node: string, type: string, id: string, user: string): string {
  const hex = (n: number) => n.toString(16).toUpperCase().padStart(8, "0");
  const now = Math.floor(Date.now() / 1000);
  return `UPID:${node}:${hex(process.pid)}:${hex(Math.floor(process.uptime() * 100))}:${hex(now)}:${type}:${id}:${user}:`;
}
