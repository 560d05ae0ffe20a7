import type { LabNode } from "@/lab";
import type { Database } from "@/lib/db/client";
import { hosts } from "@/lib/db/schema";

/**
 * The lab node stored as an onboarded host: its SSH address, port and user, the given
 * credential, and the node's host key already pinned (first contact has happened), so the code
 * under test connects the way it would to a host in the fleet. Returns the host id.
 */
export async function insertPinnedLabHost(
  db: Database,
  node: LabNode,
  host: { name: string; credentialId: string },
): Promise<string> {
  const [row] = await db
    .insert(hosts)
    .values({
      name: host.name,
      address: node.ssh.host,
      sshPort: node.ssh.port,
      sshUser: node.ssh.username,
      credentialId: host.credentialId,
      hostKeySha256: node.ssh.hostKeySha256,
      hostKeyPinnedAt: new Date(),
    })
    .returning({ id: hosts.id });
  return row!.id;
}
