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
import { clusterRoutes } from "./routes";

/**
 * A lab Proxmox VE cluster: N nodes, each with its own lab root and HTTPS API, all sharing one
 * `etc/pve` (each root's `etc/pve` is a link to the same folder, as pmxcfs gives every member
 * the same tree) and one cluster model (membership, guests, HA, Ceph). A node powered off stops
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
  /** Cluster name; default `lab`. */
  name?: string;
  /** Delay before a 401; Proxmox waits ~3 s. Default 3000. */
  apiAuthFailureDelayMs?: number;
};

export type LabClusterNode = { name: string; root: string; ip: string; api: PveApi };

export type LabCluster = {
  name: string;
  nodes: LabClusterNode[];
  /** The console's token (`clupilot@pve!console`, privsep=1, the seeded CluPilot role on /). */
  token: { id: string; secret: string };
  model: LabClusterModel;
  faults: LabClusterFaults;
  /** A token of its own user with exactly these privileges on `path` (default /), privsep=1. */
  addToken(user: string, privs: string[], aclPath?: string): { id: string; secret: string };
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
  const roots = names.map((name) => {
    const root = path.join(base, name);
    fs.mkdirSync(path.join(root, "etc"), { recursive: true });
    fs.writeFileSync(path.join(root, "etc/hostname"), `${name}\n`);
    fs.symlinkSync(path.relative(path.join(root, "etc"), shared), path.join(root, "etc/pve"));
    seedPveState(root, { state: "proxmox", node: name });
    markInstalled(root, [
      { name: "pve-manager", version: PVE_MANAGER_VERSIONS[options.pveVersion ?? "9.2"] },
    ]);
    return root;
  });
  const token = createConsoleToken(roots[0]!);
  const model = new LabClusterModel({
    nodes: names.map((name, i) => ({ name, ip: `10.10.10.${11 + i}` })),
    ...(options.name === undefined ? {} : { name: options.name }),
    ...(options.guests === undefined ? {} : { guests: options.guests }),
    ...(options.pveVersion === undefined ? {} : { pveVersion: options.pveVersion }),
    ...(options.ceph === undefined ? {} : { ceph: options.ceph }),
    ...(options.haShutdownPolicy === undefined
      ? {}
      : { haShutdownPolicy: options.haShutdownPolicy }),
    ...(options.timing === undefined ? {} : { timing: options.timing }),
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
      nodes.push({ name, root: roots[i]!, ip: model.node(name)!.ip, api });
    }
  } catch (error) {
    for (const n of nodes) await n.api.stop();
    await rm(base, { recursive: true, force: true });
    throw error;
  }
  const apiOf = (name: string) => {
    const n = nodes.find((x) => x.name === name);
    if (!n) throw new Error(`no node '${name}' in the lab cluster`);
    return n.api;
  };
  model.onNodeOff = (name) => void apiOf(name).powerOff();

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
    powerOff: async (name) => {
      apiOf(name);
      model.powerOff(name);
      await apiOf(name).powerOff();
    },
    powerOn: async (name) => {
      await apiOf(name).powerOn();
      model.powerOn(name);
    },
    stop: async () => {
      if (stopped) return;
      stopped = true;
      model.close();
      for (const n of nodes) await n.api.stop();
      await rm(base, { recursive: true, force: true });
    },
  };
}
