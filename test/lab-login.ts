import type { LabNode } from "@/lab";
import { connectSsh, SshAuthError, type SshAuth } from "@/lib/ssh";

/**
 * Whether the lab node lets `auth` in: a real SSH login against the pinned host key. A refused
 * login is false; anything else (unreachable, changed host key) is an error, not a "no".
 */
export async function labNodeAccepts(
  node: LabNode,
  auth: SshAuth,
  pinnedHostKey: string = node.ssh.hostKeySha256,
): Promise<boolean> {
  try {
    const session = await connectSsh({
      host: node.ssh.host,
      port: node.ssh.port,
      username: node.ssh.username,
      auth,
      pinnedHostKey,
      readyTimeoutMs: 5000,
    });
    session.close();
    return true;
  } catch (error) {
    if (error instanceof SshAuthError) return false;
    throw error;
  }
}
