import type { LabNode } from "@/lab";
import type { Database } from "@/lib/db/client";
import { createHost } from "@/lib/hosts/create-host";
import type { THostCluster } from "@/lib/hosts/schemas";

/**
 * Adds a lab node that runs Proxmox VE as a host the way the add-host form does (root with its
 * password, the node's own SSH and API ports), standalone or with a cluster part; its onboarding
 * run starts.
 */
export function addLabClusterHost(
  db: Database,
  node: LabNode,
  name: string,
  cluster: THostCluster,
) {
  return createHost(
    db,
    {
      name,
      address: node.ssh.host,
      sshPort: node.ssh.port,
      apiPort: node.api.port,
      sshUser: "root",
      authMethod: "password",
      password: node.ssh.password,
      cluster,
    },
    "test",
  );
}
