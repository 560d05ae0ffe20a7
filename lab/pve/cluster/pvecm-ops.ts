import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

import { readApplied } from "../../debian/network";
import { readToolFaults, pveDir } from "../state";
import {
  CLUSTER_NAME_MAX,
  CLUSTER_NAME_RE,
  clusterAreaOf,
  clusterViewOf,
  corosyncConfPath,
  hostRecords,
  passwordHash,
  parseCorosync,
  readDown,
  readHostRecord,
  renderCorosync,
  sharedFolderOf,
  withClusterLock,
  writeFileAtomic,
  writeHostRecord,
  type Corosync,
} from "./membership";
import { linkMemberPmxcfs } from "./pmxcfs";

/**
 * What `pvecm create` and `pvecm add` do to a lab node, after pve-cluster's
 * PVE::Cluster::Setup (create: PVE::API2::ClusterConfig `create`; join: `join`, `assert_joinable`,
 * the member's `addnode`, `finish_join`). Output lines and refusals are pve-cluster's; what the
 * lab leaves out is said where it happens.
 */

export class PvecmError extends Error {
  constructor(
    message: string,
    /** Lines printed before the failure (the join's progress). */
    readonly printed = "",
  ) {
    super(message);
  }
}

const AUTHKEY = "etc/corosync/authkey";
const LOCAL_COROSYNC = "etc/corosync/corosync.conf";

/** The node's IPv4 addresses as the running network has them (`ip -4 addr`), without prefix. */
export function localAddresses(root: string): string[] {
  const applied = readApplied(root);
  if (applied !== null) return applied.addresses.map((a) => a.split("/")[0]!);
  try {
    const text = fs.readFileSync(path.join(root, "etc/network/interfaces"), "utf8");
    return [...text.matchAll(/^\s*address\s+([0-9.]+)/gm)].map((m) => m[1]!);
  } catch {
    return [];
  }
}

export function isIp(text: string): boolean {
  const v4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
  return v4.test(text) || (/^[0-9a-fA-F:]+$/.test(text) && text.includes(":"));
}

/** `link0` is `address` or `address=…,priority=…` (PVE::Corosync link format). */
function linkAddress(link0: string): string {
  const first = link0.split(",")[0]!;
  return first.startsWith("address=") ? first.slice("address=".length) : first;
}

function guestCount(root: string): number {
  const nodes = path.join(pveDir(root), "nodes");
  let count = 0;
  let names: string[] = [];
  try {
    names = fs.readdirSync(nodes);
  } catch {
    return 0;
  }
  for (const node of names) {
    for (const kind of ["qemu-server", "lxc"]) {
      try {
        count += fs
          .readdirSync(path.join(nodes, node, kind))
          .filter((f) => f.endsWith(".conf")).length;
      } catch {
        /* no such folder */
      }
    }
  }
  return count;
}

/** Copies a folder tree (files, folders, links) into `to`; links are kept as they are. */
function copyTree(from: string, to: string): void {
  fs.mkdirSync(to, { recursive: true });
  for (const name of fs.readdirSync(from)) {
    const src = path.join(from, name);
    const dst = path.join(to, name);
    const stat = fs.lstatSync(src);
    if (stat.isSymbolicLink()) {
      if (!fs.existsSync(dst)) fs.symlinkSync(fs.readlinkSync(src), dst);
    } else if (stat.isDirectory()) copyTree(src, dst);
    else fs.writeFileSync(dst, fs.readFileSync(src), { mode: stat.mode & 0o777 });
  }
}

function emptyFolder(dir: string): void {
  for (const name of fs.readdirSync(dir)) {
    fs.rmSync(path.join(dir, name), { recursive: true, force: true });
  }
}

/**
 * Every top-level entry of the cluster's folder as a link in the node's `/etc/pve` (what
 * linkMemberPmxcfs names, and whatever else the cluster's configuration holds).
 */
function linkShared(root: string, shared: string): void {
  linkMemberPmxcfs(root, shared);
  const pve = pveDir(root);
  for (const name of fs.readdirSync(shared)) {
    if (name.startsWith(".lab-") || name.includes(".tmp.")) continue;
    const link = path.join(pve, name);
    if (!isLink(link) && !fs.existsSync(link)) fs.symlinkSync(path.join(shared, name), link);
  }
}

function isLink(file: string): boolean {
  try {
    return fs.lstatSync(file).isSymbolicLink();
  } catch {
    return false;
  }
}

/** The node's own links in `/etc/pve` (pmxcfs gives each member its own). */
function linkLocal(root: string, node: string): void {
  const pve = pveDir(root);
  for (const [name, target] of [
    ["local", `nodes/${node}`],
    ["qemu-server", `nodes/${node}/qemu-server`],
    ["lxc", `nodes/${node}/lxc`],
  ] as const) {
    if (!fs.existsSync(path.join(pve, name))) fs.symlinkSync(target, path.join(pve, name));
  }
}

/** Records in the lab's host records that this node now belongs to the cluster in `shared`. */
function recordMembership(root: string, node: string, shared: string): void {
  const area = clusterAreaOf(root);
  if (area === null) return;
  const mine = new Set(localAddresses(root));
  for (const record of hostRecords(area)) {
    if (record.node === node && mine.has(record.address)) {
      writeHostRecord(area, { ...record, cluster: shared });
    }
  }
}

/** `pvecm create <name> --link0 <addr>`: returns what it prints. */
export function createCluster(
  root: string,
  node: string,
  params: { clustername: string; link0?: string },
): string {
  const errors: Record<string, string> = {};
  if (!CLUSTER_NAME_RE.test(params.clustername))
    errors.clustername = `value '${params.clustername}' does not look like a valid node name`;
  else if (params.clustername.length > CLUSTER_NAME_MAX)
    errors.clustername = `value may only be ${CLUSTER_NAME_MAX} characters long`;
  if (params.link0 !== undefined && !isIp(linkAddress(params.link0)))
    errors.link0 = `invalid format - value does not look like a valid address: ${params.link0}`;
  if (Object.keys(errors).length > 0) {
    throw new PvecmError(
      `400 Parameter verification failed.\n${Object.entries(errors)
        .map(([k, v]) => `${k}: ${v}\n`)
        .join("")}`,
    );
  }
  if (fs.existsSync(corosyncConfPath(root)))
    throw new PvecmError("cluster config '/etc/pve/corosync.conf' already exists");
  const area = clusterAreaOf(root);
  if (area === null) throw new PvecmError("lab: this node has no cluster area (lab/index.ts)");
  const address = params.link0 === undefined ? localAddresses(root)[0] : linkAddress(params.link0);
  if (address === undefined) throw new PvecmError("unable to get local IP address");

  let printed = "";
  if (!fs.existsSync(path.join(root, AUTHKEY))) {
    writeFileAtomic(path.join(root, AUTHKEY), randomBytes(256), 0o400);
  }
  // pmxcfs keeps the node's configuration: it becomes the cluster's (one folder for all members).
  const shared = path.join(
    area,
    "clusters",
    `${params.clustername}-${randomBytes(6).toString("hex")}`,
  );
  const pve = pveDir(root);
  copyTree(pve, shared);
  for (const link of ["local", "qemu-server", "lxc"]) {
    fs.rmSync(path.join(shared, link), { force: true });
  }
  const conf: Corosync = {
    clusterName: params.clustername,
    configVersion: 1,
    nodes: [{ name: node, nodeid: 1, votes: 1, ring0_addr: address }],
  };
  printed += "Writing corosync config to /etc/pve/corosync.conf\n";
  writeFileAtomic(path.join(shared, "corosync.conf"), renderCorosync(conf));
  writeFileAtomic(path.join(root, LOCAL_COROSYNC), renderCorosync(conf));
  emptyFolder(pve);
  linkShared(root, shared);
  linkLocal(root, node);
  printed += "Restart corosync and cluster filesystem\n";
  recordMembership(root, node, shared);
  return printed;
}

export type JoinParams = {
  hostname: string;
  fingerprint: string;
  password: string;
  link0?: string;
  force?: boolean;
};

/**
 * `pvecm add <hostname> --fingerprint … --link0 …` (and `POST /cluster/config/join`): the
 * joining node's checks, the API login to the member (the lab's host record stands in for the
 * network: no record → nothing answers there), the member's `addnode`, then `finish_join`.
 * Returns what it prints; a PvecmError carries what was printed before the failure.
 */
export function joinCluster(root: string, node: string, params: JoinParams): string {
  let printed = "";
  const local = localAddresses(root)[0];
  const link0 = params.link0 === undefined ? undefined : linkAddress(params.link0);

  // assert_joinable
  const problems: string[] = [];
  if (fs.existsSync(path.join(root, AUTHKEY)))
    problems.push("authentication key '/etc/corosync/authkey' already exists");
  if (fs.existsSync(corosyncConfPath(root)))
    problems.push("cluster config '/etc/pve/corosync.conf' already exists");
  if (guestCount(root) > 0) problems.push("this host already contains virtual guests");
  const mine = localAddresses(root);
  for (const [label, ip] of [
    ["local node address", local],
    ["link0", link0],
  ] as const) {
    if (ip === undefined) continue;
    if (!isIp(ip)) problems.push(`${label}: cannot use '${ip}': not an IP address`);
    else if (!mine.includes(ip))
      problems.push(`${label}: cannot use IP '${ip}', not found on local node!`);
  }
  if (problems.length > 0) {
    throw new PvecmError(
      `detected the following error(s):\n${problems.map((p) => `* ${p}\n`).join("")}Check if node may join a cluster failed!`,
    );
  }

  printed += `Establishing API connection with host '${params.hostname}'\n`;
  const area = clusterAreaOf(root);
  const member = area === null ? null : readHostRecord(area, params.hostname);
  if (member === null)
    throw new PvecmError(
      `500 Can't connect to ${params.hostname}:8006 (Connection refused)`,
      printed,
    );
  if (member.apiCertSha256.toUpperCase() !== params.fingerprint.toUpperCase()) {
    // PVE::APIClient::LWP with cached_fingerprints: the certificate is not the one given.
    throw new PvecmError(
      `500 Can't connect to ${params.hostname}:8006 (certificate verify failed)`,
      printed,
    );
  }
  if (passwordHash(member.passwordSalt, params.password) !== member.passwordSha256) {
    throw new PvecmError("401 401 authentication failure", printed);
  }
  printed += "Login succeeded.\n";
  printed += "check cluster join API version\n";
  printed += "Request addition of this node\n";
  const shared = member.cluster;
  const memberFails = (message: string): never => {
    throw new PvecmError(
      `An error occurred on the cluster node: ${message}\nCluster join aborted!`,
      printed,
    );
  };
  if (shared === undefined) memberFails("cluster config '/etc/pve/corosync.conf' does not exist");
  if (readDown(shared!).includes(member.node)) {
    throw new PvecmError(
      `500 Can't connect to ${params.hostname}:8006 (Connection refused)`,
      printed,
    );
  }
  const address = link0 ?? local ?? "";
  const conf = withClusterLock(shared!, () => {
    const view = clusterViewOf(shared!, member.node);
    if (view === null) return memberFails("cluster config '/etc/pve/corosync.conf' does not exist");
    if (!view.quorate) return memberFails("cluster not ready - no quorum?");
    const current = parseCorosync(fs.readFileSync(path.join(shared!, "corosync.conf"), "utf8"));
    for (const n of current.nodes) {
      if (n.name === node) continue;
      if (n.ring0_addr === address) {
        memberFails(
          `corosync: address '${address}' already used on link ring0_addr by node '${n.name}'`,
        );
      }
    }
    const existing = current.nodes.find((n) => n.name === node);
    if (existing !== undefined) {
      if (!params.force) memberFails(`can't add existing node '${node}'`);
      printed += `forcing overwrite of configured node '${node}'\n`;
      existing.ring0_addr = address;
    } else {
      let nodeid = 1;
      while (current.nodes.some((n) => n.nodeid === nodeid)) nodeid++;
      current.nodes.push({ name: node, nodeid, votes: 1, ring0_addr: address });
    }
    current.configVersion += 1;
    for (const sub of ["qemu-server", "lxc", "priv", "openvz"]) {
      fs.mkdirSync(path.join(shared!, "nodes", node, sub), { recursive: true });
    }
    const text = renderCorosync(current);
    writeFileAtomic(path.join(shared!, "corosync.conf"), text);
    return text;
  });
  printed += "Join request OK, finishing setup locally\n";

  if (readToolFaults(root).clusterJoinDiesHalfWay) {
    // The member has the node in its nodelist; this side never got its config (the process
    // died, the connection dropped): the half-joined state an operator has to clear.
    throw new PvecmError("lab: the join died half-way (pve.clusterJoinDiesHalfWay)", printed);
  }

  // finish_join
  writeFileAtomic(path.join(root, AUTHKEY), randomBytes(256), 0o400);
  writeFileAtomic(path.join(root, LOCAL_COROSYNC), conf);
  printed += "stopping pve-cluster service\n";
  const pve = pveDir(root);
  // cfs_backup_database: the pre-join configuration is kept, /etc/pve becomes the cluster's.
  const backup = path.join(root, "var/lib/pve-cluster/backup", `config-${Date.now()}`);
  copyTree(pve, backup);
  const ownNode = path.join(pve, "nodes", node);
  const keep = path.join(root, "var/lib/pve-cluster/.lab-join-node");
  fs.rmSync(keep, { recursive: true, force: true });
  if (fs.existsSync(ownNode) && !fs.lstatSync(path.join(pve, "nodes")).isSymbolicLink()) {
    copyTree(ownNode, keep);
  }
  emptyFolder(pve);
  linkShared(root, shared!);
  // The node's certificate files (updatecerts signs a new one with the cluster CA; the lab keeps
  // the node's own key pair, so its API answers with the same certificate as before the join).
  if (fs.existsSync(keep)) {
    for (const name of fs.readdirSync(keep)) {
      if (!/\.(pem|key)$/.test(name)) continue;
      const dst = path.join(shared!, "nodes", node, name);
      if (!fs.existsSync(dst)) fs.copyFileSync(path.join(keep, name), dst);
    }
    fs.rmSync(keep, { recursive: true, force: true });
  }
  linkLocal(root, node);
  printed += "waiting for quorum...OK\n";
  recordMembership(root, node, shared!);
  printed += "generated new node certificate, restart pveproxy and pvedaemon services\n";
  printed += `successfully added node '${node}' to cluster.\n`;
  return printed;
}

export { sharedFolderOf };

/**
 * `pvecm delnode <node>` (PVE::API2::ClusterConfig `delnode`, pve-cluster 9): run on a member
 * that stays. It refuses to delete the node it runs on and works only with quorum
 * (check_cfs_quorum); the node is found by name or ring0 address; it leaves the nodelist under
 * the config lock with the config version raised (atomic_write_conf). pve-cluster does not refuse
 * a node that is still up: it runs `corosync-cfgtool -k <nodeid>` to kill that node's corosync
 * ("allowed to fail when node is already shut down") — the lab does the same, so a node removed
 * while up is cut off, as on Proxmox. It does not touch `/etc/pve/nodes/<node>` (Proxmox's
 * documentation leaves that to the operator). Returns what it prints on stdout and stderr.
 */
export function deleteNode(
  root: string,
  localNode: string,
  name: string,
): { stdout: string; stderr: string } {
  if (!CLUSTER_NAME_RE.test(name) && !isIp(name)) {
    throw new PvecmError(
      "400 Parameter verification failed.\nnode: invalid format - value does not look like a valid node name",
    );
  }
  if (name === localNode) throw new PvecmError("Cannot delete myself from cluster!");
  const shared = sharedFolderOf(root);
  const view = shared === null ? null : clusterViewOf(shared, localNode);
  // A standalone node's /etc/pve is writable (it counts as quorate) and its nodelist is empty.
  if (shared !== null && view !== null && !view.quorate)
    throw new PvecmError("cluster not ready - no quorum?");
  if (shared === null) throw new PvecmError(`Node/IP: ${name} is not a known host of the cluster.`);
  return withClusterLock(shared, () => {
    const current = parseCorosync(fs.readFileSync(path.join(shared, "corosync.conf"), "utf8"));
    const gone = current.nodes.find((n) => n.name === name || n.ring0_addr === name);
    if (gone === undefined)
      throw new PvecmError(`Node/IP: ${name} is not a known host of the cluster.`);
    const wasUp = !readDown(shared).includes(gone.name);
    current.nodes = current.nodes.filter((n) => n !== gone);
    current.configVersion += 1;
    writeFileAtomic(path.join(shared, "corosync.conf"), renderCorosync(current));
    // corosync-cfgtool -k: the node's corosync ends (it stays in the down list: it is cut off
    // for good); on a node that is already down it fails, which delnode ignores.
    if (wasUp) {
      const down = new Set(readDown(shared));
      down.add(gone.name);
      writeFileAtomic(path.join(shared, ".lab-down.json"), `${JSON.stringify([...down].sort())}\n`);
      return { stdout: `Killing node ${gone.nodeid}\n`, stderr: "" };
    }
    return { stdout: "", stderr: "Could not kill node (error = CS_ERR_NOT_EXIST)\n" };
  });
}
