import type { LabGuestSpec } from "./pve/cluster/model";
import type { LabPowerControllers } from "./power-controllers";
import type { LabCluster } from "./pve/cluster/start";

/**
 * What `npm run lab -- --cluster N [--ceph]` puts on the cluster: per node two VMs and a
 * container with different shutdown times (the first VM HA-managed; with Ceph the VMs' disks on
 * the RBD pool and the containers' on local storage; without, every disk on the cluster's shared
 * NFS storage, so the cluster can be consolidated onto one node), and one VM on the last node
 * that hangs on a clean shutdown until forced. Durations are a demo's (seconds) times
 * `timeScale`.
 */
export function labClusterGuests(
  nodes: readonly string[],
  options: { ceph: boolean; timeScale: number },
): { guests: LabGuestSpec[]; hanging: number[] } {
  const ms = (seconds: number) => Math.round(seconds * 1000 * options.timeScale);
  const guests = nodes.flatMap((node, i): LabGuestSpec[] => {
    const base = 100 + i * 10;
    return [
      {
        vmid: base,
        type: "qemu",
        node,
        name: `web${i + 1}`,
        ha: true,
        storage: options.ceph ? "ceph" : "nfs",
        shutdownMs: ms(20),
      },
      {
        vmid: base + 1,
        type: "qemu",
        node,
        name: `db${i + 1}`,
        storage: options.ceph ? "ceph" : "nfs",
        shutdownMs: ms(45),
      },
      {
        vmid: base + 2,
        type: "lxc",
        node,
        name: `ct${i + 1}`,
        storage: options.ceph ? "local" : "nfs",
        shutdownMs: ms(5),
      },
    ];
  });
  return { guests, hanging: [100 + (nodes.length - 1) * 10 + 1] };
}

/**
 * The cluster part of the printed JSON: per node its SSH side (what Add host takes) and where its
 * API answers, its power controllers (what the host page's Power controller form takes), and the
 * token the lab seeded for tests that skip onboarding.
 */
export function describeCluster(
  cluster: LabCluster,
  controllers: LabPowerControllers | null = null,
) {
  return {
    name: cluster.name,
    ceph: cluster.model.ceph !== null,
    token: cluster.token,
    nodes: cluster.nodes.map((n) => ({
      name: n.name,
      ip: n.ip,
      ssh: {
        host: n.ssh.host,
        port: n.ssh.port,
        username: n.ssh.username,
        password: n.ssh.password,
        hostKeySha256: n.ssh.hostKeySha256,
      },
      api: { url: n.api.url, certSha256: n.api.certSha256 },
      ...(controllers === null ? {} : { bmc: describeControllers(controllers, n.name) }),
    })),
  };
}

export function describeControllers(controllers: LabPowerControllers, name: string) {
  const node = controllers.node(name);
  const login = { username: controllers.username, password: controllers.password };
  return {
    redfish: {
      address: node.redfish.address,
      port: node.redfish.port,
      systemId: node.redfish.systemId,
      certSha256: node.redfish.certSha256,
      ...login,
    },
    ipmi: { address: node.ipmi.address, port: node.ipmi.port, ...login },
    wol: node.wol,
  };
}
