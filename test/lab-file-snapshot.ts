import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";

/**
 * The lab node's state as files: every file under its root with its SHA-256 — /etc (hosts, apt
 * sources, network, pve: storage.cfg, user.cfg, token.cfg, qemu-server VM configs), dpkg and apt
 * state, the clupilot state dir (template status, images), root's authorized_keys, the lab's
 * own kernel and power records. Logs are left out: they grow by design. Two snapshots that are
 * equal mean a run changed nothing on the node.
 */
export async function snapshotLabFiles(root: string): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  const walk = async (dir: string) => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      const rel = path.relative(root, full);
      if (entry.isDirectory()) await walk(full);
      else if (entry.isFile() && !/(^|\/)[^/]*log$|\.log$/.test(rel)) {
        files.set(
          rel,
          createHash("sha256")
            .update(await readFile(full))
            .digest("hex"),
        );
      }
    }
  };
  await walk(root);
  return files;
}
