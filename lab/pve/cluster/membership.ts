import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

import { labDir } from "../../debian/lab-state";
import { pveDir } from "../state";
import { parseCorosyncConf } from "./join-info";

/**
 * Cluster membership as pmxcfs and corosync give it, kept in files so that every side of the
 * lab reads the same truth: the simulated `pvecm` (run by the tool server, in a node's view of
 * the file system), each node's API (`/cluster/status`, `/cluster/config/join`) and the lab
 * process (fault switches, start and stop).
 *
 * - The **nodelist** is the cluster's `corosync.conf` in its shared pmxcfs folder, as on
 *   Proxmox: the file whose presence makes a node a member. A member's `/etc/pve/corosync.conf`
 *   is a link into that folder (./pmxcfs.ts), so the folder is found from any member's root.
 * - **Who is up** (corosync running and reachable) is `.lab-down.json` in the shared folder:
 *   the names of members whose corosync is gone (node stopped, or the `pve.corosyncDown`
 *   switch). A member that is down sees only itself; the others see it offline. Quorate: more
 *   than half of all votes online, as votequorum counts.
 * - **Clusters made at run time** (`pvecm create`) live under the lab's cluster area, one real
 *   folder per lab process that every standalone node's namespace binds at its own path
 *   (`<root>/.lab/cluster-fs` names it). Its `hosts/<address>.json` is the lab's stand-in for the
 *   network between nodes: which node answers on that address, its API certificate's
 *   fingerprint and a salted hash of its root password (what the join's API login checks), and
 *   the shared folder of the cluster it belongs to (the join talks to that member's pmxcfs).
 */

export type CorosyncNode = { name: string; nodeid: number; votes: number; ring0_addr: string };

export type Corosync = { clusterName: string; configVersion: number; nodes: CorosyncNode[] };

export type MemberView = CorosyncNode & { online: boolean; local: boolean };

export type ClusterView = {
  name: string;
  configVersion: number;
  /** The shared pmxcfs folder (a real path, the same inside every member). */
  shared: string;
  members: MemberView[];
  quorate: boolean;
  totalVotes: number;
  onlineVotes: number;
};

/** The lab host record the join "connects" to (see above). */
export type LabHostRecord = {
  address: string;
  node: string;
  apiCertSha256: string;
  passwordSalt: string;
  passwordSha256: string;
  /** The shared pmxcfs folder of the host's cluster; absent while standalone. */
  cluster?: string;
};

export const CLUSTER_NAME_RE = /^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?$/;
export const CLUSTER_NAME_MAX = 15;

export function corosyncConfPath(root: string): string {
  return path.join(pveDir(root), "corosync.conf");
}

/** The shared pmxcfs folder `root`'s `/etc/pve` links into, or null (standalone node). */
export function sharedFolderOf(root: string): string | null {
  try {
    const file = corosyncConfPath(root);
    if (!fs.lstatSync(file).isSymbolicLink()) return null;
    return path.dirname(path.resolve(path.dirname(file), fs.readlinkSync(file)));
  } catch {
    return null;
  }
}

export function parseCorosync(text: string): Corosync {
  const conf = parseCorosyncConf(text);
  const nodelist = conf.children.find((c) => c.name === "nodelist")?.section;
  const totem = conf.children.find((c) => c.name === "totem")?.section;
  const nodes = (nodelist?.children ?? [])
    .filter((c) => c.name === "node")
    .map((c) => ({
      name: c.section.values.get("name") ?? "",
      nodeid: Number(c.section.values.get("nodeid") ?? 0),
      votes: Number(c.section.values.get("quorum_votes") ?? 1),
      ring0_addr: c.section.values.get("ring0_addr") ?? "",
    }));
  return {
    clusterName: totem?.values.get("cluster_name") ?? "",
    configVersion: Number(totem?.values.get("config_version") ?? 0),
    nodes,
  };
}

/** corosync.conf as `pvecm create` / `pvecm add` write it (PVE::Corosync::create_conf). */
export function renderCorosync(c: Corosync): string {
  const nodes = c.nodes
    .map(
      (n) =>
        `  node {\n    name: ${n.name}\n    nodeid: ${n.nodeid}\n    quorum_votes: ${n.votes}\n    ring0_addr: ${n.ring0_addr}\n  }\n`,
    )
    .join("");
  return (
    "logging {\n  debug: off\n  to_syslog: yes\n}\n\n" +
    `nodelist {\n${nodes}}\n\n` +
    "quorum {\n  provider: corosync_votequorum\n}\n\n" +
    `totem {\n  cluster_name: ${c.clusterName}\n  config_version: ${c.configVersion}\n` +
    "  interface {\n    linknumber: 0\n  }\n  ip_version: ipv4-6\n  link_mode: passive\n" +
    "  secauth: on\n  version: 2\n}\n"
  );
}

export function readCorosync(root: string): Corosync | null {
  try {
    return parseCorosync(fs.readFileSync(corosyncConfPath(root), "utf8"));
  } catch {
    return null;
  }
}

function downPath(shared: string): string {
  return path.join(shared, ".lab-down.json");
}

export function readDown(shared: string): string[] {
  try {
    const parsed = JSON.parse(fs.readFileSync(downPath(shared), "utf8")) as unknown;
    return Array.isArray(parsed) ? parsed.filter((x): x is string => typeof x === "string") : [];
  } catch {
    return [];
  }
}

/** Marks `node`'s corosync down (or up again) in its cluster; no-op on a standalone node. */
export function setCorosyncDown(shared: string, node: string, down: boolean): void {
  withClusterLock(shared, () => {
    const set = new Set(readDown(shared));
    if (down) set.add(node);
    else set.delete(node);
    writeFileAtomic(downPath(shared), `${JSON.stringify([...set].sort())}\n`);
  });
}

/** The cluster as `localNode` sees it, or null when `root` is no member of a cluster. */
export function clusterView(root: string, localNode: string): ClusterView | null {
  const shared = sharedFolderOf(root);
  return shared === null ? null : clusterViewOf(shared, localNode);
}

/** The cluster whose shared pmxcfs folder is `shared`, as `localNode` sees it. */
export function clusterViewOf(shared: string, localNode: string): ClusterView | null {
  let conf: Corosync;
  try {
    conf = parseCorosync(fs.readFileSync(path.join(shared, "corosync.conf"), "utf8"));
  } catch {
    return null;
  }
  const down = new Set(readDown(shared));
  const localDown = down.has(localNode);
  const members = conf.nodes.map((n) => ({
    ...n,
    local: n.name === localNode,
    // A node whose corosync is gone sees only itself; the others do not see it.
    online: localDown ? n.name === localNode : !down.has(n.name),
  }));
  const totalVotes = members.reduce((sum, m) => sum + m.votes, 0);
  const onlineVotes = members.filter((m) => m.online).reduce((sum, m) => sum + m.votes, 0);
  return {
    name: conf.clusterName,
    configVersion: conf.configVersion,
    shared,
    members,
    totalVotes,
    onlineVotes,
    quorate: onlineVotes > totalVotes / 2,
  };
}

export function writeFileAtomic(file: string, content: string | Buffer, mode?: number): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.tmp.${process.pid}.${randomBytes(4).toString("hex")}`;
  fs.writeFileSync(tmp, content, mode === undefined ? {} : { mode });
  fs.renameSync(tmp, file);
}

/** corosync's config lock across members (pmxcfs' `cfs_lock_file`), a lock file in the folder. */
export function withClusterLock<T>(shared: string, fn: () => T, timeoutMs = 10_000): T {
  const lock = path.join(shared, ".lab-lock");
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      fs.closeSync(fs.openSync(lock, "wx"));
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      if (Date.now() > deadline) throw new Error("got lock request timeout");
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
    }
  }
  try {
    return fn();
  } finally {
    fs.rmSync(lock, { force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// The lab's cluster area and its host records

/** The file in a node's lab folder naming the cluster area its namespace binds. */
export function clusterAreaPointer(root: string): string {
  return path.join(labDir(root), "cluster-fs");
}

export function clusterAreaOf(root: string): string | null {
  try {
    const text = fs.readFileSync(clusterAreaPointer(root), "utf8").trim();
    return text === "" ? null : text;
  } catch {
    return null;
  }
}

function hostRecordPath(area: string, address: string): string {
  return path.join(area, "hosts", `${address}.json`);
}

export function passwordHash(salt: string, password: string): string {
  return createHash("sha256").update(`${salt}\0${password}`).digest("hex");
}

export function readHostRecord(area: string, address: string): LabHostRecord | null {
  if (!/^[0-9a-fA-F.:]+$/.test(address)) return null;
  try {
    return JSON.parse(fs.readFileSync(hostRecordPath(area, address), "utf8")) as LabHostRecord;
  } catch {
    return null;
  }
}

export function writeHostRecord(area: string, record: LabHostRecord): void {
  writeFileAtomic(hostRecordPath(area, record.address), `${JSON.stringify(record)}\n`);
}

export function removeHostRecord(area: string, address: string): void {
  fs.rmSync(hostRecordPath(area, address), { force: true });
}

/** Every host record of the area (a node finds its own by name and address). */
export function hostRecords(area: string): LabHostRecord[] {
  let names: string[];
  try {
    names = fs.readdirSync(path.join(area, "hosts"));
  } catch {
    return [];
  }
  const out: LabHostRecord[] = [];
  for (const name of names) {
    if (!name.endsWith(".json")) continue;
    const record = readHostRecord(area, name.slice(0, -".json".length));
    if (record) out.push(record);
  }
  return out;
}
