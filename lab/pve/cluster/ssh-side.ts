import { randomBytes } from "node:crypto";
import path from "node:path";

import { labCommandEnv } from "../../command-env";
import { seedDebianHost } from "../../debian/seed";
import { hostRootPaths, prepareHostRoot } from "../../host-root";
import { LabSshServer, NO_SSH_FAULTS } from "../../ssh-server";

/**
 * A cluster node's Debian and SSH side, as a standalone lab node has (lab/index.ts): the host
 * root laid out like Debian 13 with Proxmox installed (addressed on the cluster network), and a
 * real SSH server whose commands run the simulated tools against this node's root — so a person
 * can onboard the node through Add host like a host that already runs Proxmox. Seeded before
 * the Proxmox side: the Debian seed only lays out a host whose packages are not yet recorded.
 */

export type ClusterNodeSsh = {
  host: "127.0.0.1";
  readonly port: number;
  username: "root";
  password: string;
  readonly hostKeySha256: string;
  server: LabSshServer;
};

/** Lays out the node's Debian host (before its Proxmox side is seeded). */
export async function seedClusterNodeHost(
  root: string,
  node: { name: string; ip: string },
  timeScale: number | undefined,
): Promise<void> {
  await prepareHostRoot(hostRootPaths(root, "root"), { hostname: node.name, os: undefined });
  seedDebianHost(root, {
    state: "proxmox",
    address: `${node.ip}/24`,
    gateway: node.ip.replace(/\.\d+$/, ".1"),
    ...(timeScale === undefined ? {} : { timing: { timeScale } }),
  });
}

/** `shared` is the cluster's pmxcfs folder, which the node's `/etc/pve` links into. */
export async function startClusterNodeSsh(root: string, shared: string): Promise<ClusterNodeSsh> {
  const paths = hostRootPaths(root, "root");
  const password = randomBytes(12).toString("base64url");
  const server = await LabSshServer.start({
    root,
    shared: [shared],
    hostKeyPath: paths.hostKeyPath,
    username: "root",
    password,
    home: paths.home,
    authorizedKeysFile: path.join(paths.homeFolder, ".ssh", "authorized_keys"),
    env: labCommandEnv(paths, "root"),
    faults: { ...NO_SSH_FAULTS },
  });
  return {
    host: "127.0.0.1",
    get port() {
      return server.port;
    },
    username: "root",
    password,
    get hostKeySha256() {
      return server.hostKeySha256;
    },
    server,
  };
}
