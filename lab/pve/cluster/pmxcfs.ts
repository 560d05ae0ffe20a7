import fs from "node:fs";
import path from "node:path";

/**
 * What each member's `/etc/pve` looks like on a cluster: pmxcfs gives every member the same
 * tree, except `local` (and `qemu-server`, `lxc`), which point to the member's own
 * `nodes/<node>`. In the lab each node's `etc/pve` is a folder of links into the one shared
 * folder, so its `local` can be its own (the seed makes it); writes through a link reach the
 * shared copy (lab/pve/state.ts `writeAtomic`). The links are absolute: each member's mount
 * namespace shows the shared folder at its real path (lab/namespace/binds.ts, `shared`), so
 * they lead to the same files inside the node as outside.
 */

const SHARED_FOLDERS = ["nodes", "priv", "ha", "firewall", "virtual-guest", "sdn", "mapping"];
const SHARED_FILES = ["user.cfg", "storage.cfg", "datacenter.cfg", "corosync.conf", "domains.cfg"];

export function linkMemberPmxcfs(root: string, shared: string): void {
  const pve = path.join(root, "etc/pve");
  fs.mkdirSync(pve, { recursive: true });
  for (const name of SHARED_FOLDERS) fs.mkdirSync(path.join(shared, name), { recursive: true });
  for (const name of [...SHARED_FOLDERS, ...SHARED_FILES]) {
    fs.symlinkSync(path.join(path.resolve(shared), name), path.join(pve, name));
  }
}
