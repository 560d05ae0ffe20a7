import type { Database } from "@/lib/db/client";
import { createHost } from "@/lib/hosts/create-host";
import type { LabNode } from "@/lab";

/**
 * Adds a lab node as a host the way an operator's form does (password, the node's SSH port),
 * which starts its onboarding run; the caller settles or drives that run.
 */
export function createLabHost(db: Database, node: LabNode, name: string) {
  return createHost(
    db,
    {
      name,
      address: node.ssh.host,
      sshPort: node.ssh.port,
      apiPort: 8006,
      sshUser: node.ssh.username,
      authMethod: "password",
      password: node.ssh.password,
    },
    "test",
  );
}
