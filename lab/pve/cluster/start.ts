import fs from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";

import {
  newTokenSecret,
  readTokenSecrets,
  readUserCfg,
  verifyPrivs,
  writeTokenSecrets,
  writeUserCfg,
} from "../access";
import { markInstalled } from "../../debian/dpkg-status";
import { startPveApi, type PveApi } from "../api";
import { installCustomCert } from "../cert";
import { createConsoleToken, seedPveState } from "../seed";
import { withPveLock } from "../state";
import {
  LabClusterModel,
  PVE_MANAGER_VERSIONS,
  type LabCephOptions,
  type LabClusterFaults,
  type LabClusterTiming,
  type LabGuestSpec,
  type PveRelease,
} from "./model";
import { moveGuestConfig, writeClusterConfigs } from "./guest-configs";
import { setCorosyncDown } from "./membership";
import { linkMemberPmxcfs } from "./pmxcfs";
import { clusterRoutes } from "./routes";
import { seedClusterNodeHost, startClusterNodeSsh, type ClusterNodeSsh } from "./ssh-side";

/**
 * A lab Proxmox VE cluster: N nodes, each with its own lab root, HTTPS API and SSH side, all
 * sharing one `etc/pve` (./pmxcfs.ts: each member sees the same tree, `local` its own node)
 * and one cluster model (membership, guests, HA, Ceph). A node powered off stops
 * answering (connections refused); the others report it `online: 0`.
 */

export type StartLabClusterOptions = {
  /** Number of nodes (named pve1…pveN) or their names. */
  nodes: number | string[];
  guests?: LabGuestSpec[];
  /** Default 9.2 (disarm-ha/arm-ha exist); 9.1 and 8.4 have no disarm, 8.4 no bulk actions. */
  pveVersion?: PveRelease;
  ceph?: boolean | LabCephOptions;
  haShutdownPolicy?: "conditional" | "freeze" | "failover" | "migrate";
  timing?: Partial<LabClusterTiming>;
  /** Every node's memory, or per node name (MiB). Default 64 GiB. */
  nodeMemoryMiB?: number | Record<string, number>;
  /** Cluster name; default `lab`. */
  name?: string;
  /** Delay before a 401; Proxmox waits ~3 s. Default 3000. */
  apiAuthFailureDelayMs?: number;
  /** Multiplier on the Debian side's simulated durations (apt, reboots). Default 1. */
  timeScale?: number;
};

export type LabClusterNode = {
  name: string;
  root: string;
  ip: string;
  api: PveApi;
  /** Root over real SSH (password), as a standalone lab node: what Add host needs. */
  ssh: ClusterNodeSsh;
};

export type LabCluster = {
  name: string;
  nodes: LabClusterNode[];
  /** The console's token (`clupilot@pve!console`, privsep=1, the seeded CluPilot role on /). */
  token: { id: string; secret: string };
  model: LabClusterModel;
  faults: LabClusterFaults;
  /** A token of its own user with exactly these privileges on `path` (default /), privsep=1. */
  addToken(user: string, privs: string[], aclPath?: string): { id: string; secret: string };
  /**
   * An operator installs their own API certificate on the node (`pveproxy-ssl.pem` in its
   * `/etc/pve/nodes/<node>`): the cluster's join info names it at once; the node's API serves it
   * only once pveproxy restarted (`restart`), as on Proxmox. Returns its fingerprint.
   */
  installCustomCertificate(node: string, options: { restart: boolean }): Promise<string>;
  /** The node loses power at once: its guests die with it, HA may recover them elsewhere. */
  powerOff(node: string): Promise<void>;
  powerOn(node: string): Promise<void>;
  stop(): Promise<void>;
};

export async function startLabCluster(options: StartLabClusterOptions): Promise<LabCluster> {
  const names =
    typeof options.nodes === "number"
      ? Array.from({ length: options.nodes }, (_, i) => `pve${i + 1}`)
      : options.nodes;
  if (names.length < 1) throw new Error("a cluster needs at least one node");
  const base = await mkdtemp(path.join(os.tmpdir(), "clupilot-lab-cluster-"));
  const shared = path.join(base, "pmxcfs");
  fs.mkdirSync(shared, { recursive: true });
  const ipOf = (i: number) => `10.10.10.${11 + i}`;
  const roots: string[] = [];
  for (const [i, name] of names.entries()) {
    const root = path.join(base, name);
    await seedClusterNodeHost(root, { name, ip: ipOf(i) }, options.timeScale);
    linkMemberPmxcfs(root, shared);
    seedPveState(root, { state: "proxmox", node: name });
    markInstalled(root, [
      { name: "pve-manager", version: PVE_MANAGER_VERSIONS[options.pveVersion ?? "9.2"] },
    ]);
    roots.push(root);
  }
  const token = createConsoleToken(roots[0]!);
  const model = new LabClusterModel({
    nodes: names.map((name, i) => ({ name, ip: ipOf(i) })),
    ...(options.name === undefined ? {} : { name: options.name }),
    ...(options.guests === undefined ? {} : { guests: options.guests }),
    ...(options.pveVersion === undefined ? {} : { pveVersion: options.pveVersion }),
    ...(options.ceph === undefined ? {} : { ceph: options.ceph }),
    ...(options.haShutdownPolicy === undefined
      ? {}
      : { haShutdownPolicy: options.haShutdownPolicy }),
    ...(options.timing === undefined ? {} : { timing: options.timing }),
    ...(options.nodeMemoryMiB === undefined ? {} : { nodeMemoryMiB: options.nodeMemoryMiB }),
  });
  writeClusterConfigs(roots[0]!, model);
  model.onGuestMoved = (guest, from) => moveGuestConfig(roots[0]!, guest, from);
  const routes = clusterRoutes(model);
  const nodes: LabClusterNode[] = [];
  try {
    for (const [i, name] of names.entries()) {
      const api = await startPveApi({
        root: roots[i]!,
        node: name,
        routes,
        ...(options.apiAuthFailureDelayMs === undefined
          ? {}
          : { authFailureDelayMs: options.apiAuthFailureDelayMs }),
      });
      let ssh: ClusterNodeSsh;
      try {
        ssh = await startClusterNodeSsh(roots[i]!, shared);
      } catch (error) {
        await api.stop();
        throw error;
      }
      nodes.push({ name, root: roots[i]!, ip: model.node(name)!.ip, api, ssh });
    }
  } catch (error) {
    for (const n of nodes) await stopNode(n);
    await rm(base, { recursive: true, force: true });
    throw error;
  }
  const nodeOf = (name: string) => {
    const n = nodes.find((x) => x.name === name);
    if (!n) throw new Error(`no node '${name}' in the lab cluster`);
    return n;
  };
  // Powered off, a node answers neither its API nor SSH, as a real one.
  const off = async (n: LabClusterNode) => {
    // corosync goes with the node: pvecm on the others no longer lists it.
    setCorosyncDown(shared, n.name, true);
    await n.api.powerOff();
    await n.ssh.server.stop();
  };
  model.onNodeOff = (name) => void off(nodeOf(name));

  let stopped = false;
  return {
    name: model.name,
    nodes,
    token,
    model,
    faults: model.faults,
    addToken(user, privs, aclPath = "/") {
      verifyPrivs(privs);
      const root = roots[0]!;
      return withPveLock(root, () => {
        const cfg = readUserCfg(root);
        const userid = `${user}@pve`;
        const id = `${userid}!token`;
        const role = `Lab-${user}`;
        if (!cfg.users.some((u) => u.userid === userid)) {
          cfg.users.push({
            userid,
            enable: true,
            expire: 0,
            firstname: "",
            lastname: "",
            email: "",
            comment: "",
          });
        }
        if (!cfg.tokens.some((t) => t.id === id))
          cfg.tokens.push({ id, expire: 0, privsep: true, comment: "" });
        cfg.roles.set(role, privs);
        for (const ugid of [userid, id]) {
          cfg.acls.push({ propagate: true, path: aclPath, ugids: [ugid], roles: [role] });
        }
        writeUserCfg(root, cfg);
        const secrets = readTokenSecrets(root);
        const secret = secrets.get(id) ?? newTokenSecret();
        secrets.set(id, secret);
        writeTokenSecrets(root, secrets);
        return { id, secret };
      });
    },
    installCustomCertificate: async (name, { restart }) => {
      const n = nodeOf(name);
      const cert = installCustomCert(n.root, name);
      if (restart) {
        await n.api.powerOff();
        await n.api.powerOn();
      }
      return cert.sha256;
    },
    powerOff: async (name) => {
      const n = nodeOf(name);
      model.powerOff(name);
      await off(n);
    },
    powerOn: async (name) => {
      const n = nodeOf(name);
      await n.api.powerOn();
      await n.ssh.server.restart();
      setCorosyncDown(shared, name, false);
      model.powerOn(name);
    },
    stop: async () => {
      if (stopped) return;
      stopped = true;
      model.close();
      for (const n of nodes) await stopNode(n);
      await rm(base, { recursive: true, force: true });
    },
  };
}

async function stopNode(node: LabClusterNode): Promise<void> {
  await node.api.stop();
  await node.ssh.server.stop();
}
