import type { LabPbs } from "../pbs/server";
import { registerPowerControllerSwitches, type LabPowerControllers } from "../power-controllers";
import type { GuestStorage } from "../pve/cluster/model";
import type { LabCluster } from "../pve/cluster/start";
import { registerClusterSwitches } from "../pve/cluster/switches";
import { booleanSwitch, SwitchRegistry } from "./switches";

/**
 * The lab cluster and the lab backup server on the control page and API: what a person needs to
 * see while the console shuts them down (members, quorum, guests, HA, Ceph flags) and their
 * fault switches and power actions.
 */

export type ControlClusterState = {
  name: string;
  pveVersion: string;
  quorate: boolean;
  ha: { armedState: string; resourceMode: string | null };
  nodes: {
    name: string;
    ip: string;
    online: boolean;
    memory: { total: number; used: number };
    api: { url: string; certSha256: string };
  }[];
  guests: {
    vmid: number;
    type: "qemu" | "lxc";
    name: string;
    node: string;
    status: string;
    ha: boolean;
    storage: GuestStorage;
    memoryBytes: number;
    /** The node a migration under way moves it to. */
    migratingTo: string | null;
    shutdownMs: number;
    /** Running on Ceph while the pool blocks I/O: its shutdown hangs. */
    frozen: boolean;
  }[];
  ceph: {
    flags: string[];
    monitors: string[];
    osdsPerNode: number;
    pools: { name: string; size: number; minSize: number }[];
    blocked: boolean;
  } | null;
};

export type ControlCluster = { state(): ControlClusterState; switches: SwitchRegistry };

export function controlCluster(
  cluster: LabCluster,
  controllers: LabPowerControllers | null = null,
): ControlCluster {
  const { model } = cluster;
  const switches = registerClusterSwitches(new SwitchRegistry(), cluster);
  // The nodes' BMCs: `bmc.<node>.unreachable|neverBoots|bootMs`.
  if (controllers) registerPowerControllerSwitches(switches, controllers);
  return {
    switches,
    state: () => ({
      name: model.name,
      pveVersion: model.version,
      quorate: model.quorate,
      ha: { armedState: model.armedState, resourceMode: model.resourceMode },
      nodes: cluster.nodes.map((n) => ({
        name: n.name,
        ip: n.ip,
        online: model.node(n.name)?.online ?? false,
        memory: model.memoryOf(n.name),
        api: { url: n.api.url, certSha256: n.api.certSha256 },
      })),
      guests: [...model.guests.values()]
        .sort((a, b) => a.vmid - b.vmid)
        .map((g) => ({
          vmid: g.vmid,
          type: g.type,
          name: g.name,
          node: g.node,
          status: g.status,
          ha: model.ha.has(g.vmid),
          storage: g.storage,
          memoryBytes: g.memoryBytes,
          migratingTo: g.migratingTo,
          shutdownMs: g.shutdownMs,
          frozen: model.frozen(g),
        })),
      ceph:
        model.ceph === null
          ? null
          : {
              flags: [...model.ceph.flags].sort(),
              monitors: model.ceph.monitors,
              osdsPerNode: model.ceph.osdsPerNode,
              pools: model.ceph.pools,
              blocked: model.cephBlocked(),
            },
    }),
  };
}

export type ControlPbsState = {
  name: string;
  url: string;
  certSha256: string;
  token: { id: string; secret: string };
  state: LabPbs["state"];
  requests: number;
};

export type ControlPbs = { state(): ControlPbsState; switches: SwitchRegistry };

export function controlPbs(pbs: LabPbs): ControlPbs {
  let privilege = true;
  const switches = new SwitchRegistry()
    .register(
      booleanSwitch({
        name: "pbs.statusPostHang",
        description: "POST /nodes/{node}/status never answers and does nothing.",
        get: () => pbs.faults.statusPostHang,
        set: (value) => {
          pbs.faults.statusPostHang = value;
        },
      }),
    )
    .register(
      booleanSwitch({
        name: "pbs.powerPrivilege",
        description:
          "The console's token holds Sys.PowerManagement on /system/status (off: the shutdown is refused with 403).",
        get: () => privilege,
        set: (value) => {
          privilege = value;
          pbs.setPowerPrivilege(value);
        },
      }),
    )
    .registerAction({
      name: "pbs.powerOn",
      description: "The backup server boots after a shutdown: its API answers again.",
      run: () => pbs.powerOn(),
    });
  return {
    switches,
    state: () => ({
      name: pbs.name,
      url: pbs.url,
      certSha256: pbs.certSha256,
      token: pbs.token,
      state: pbs.state,
      requests: pbs.requests.length,
    }),
  };
}
