import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/**
 * What a lab node's mount namespace binds where: the one table both sides read. The namespace
 * (./namespace.ts, ./mount-binds) mounts it; the tool server (./node-paths.ts) translates the
 * paths a simulated tool is given with it. So `/tmp/x.img` names the same file for the node's
 * bash and for its `qm`.
 *
 * The node's own folders cover the real ones where a host keeps its state: `/etc`, `/var`,
 * `/root`, `/home`, `/tmp`, `/run`, `/mnt`, `/srv`, `/opt`, plus `/usr/share/keyrings` (apt
 * keyrings live there) and two files, `/usr/lib/os-release` (what `/etc/os-release` links to)
 * and `/proc/sys/kernel/random/boot_id`. The rest of the real system (`/usr`, `/bin`, `/lib`,
 * `/proc`, `/dev`) stays visible, read-only except `/dev` and `/proc`: real programs run, and
 * nothing a node does lands outside its root folder.
 */

import { NODE_LAB_DIR, NODE_TOOLS_DIR, type Bind } from "./layout";

export type { Bind } from "./layout";

/** lab/tools on the real system. */
export const LAB_TOOLS_DIR = path.join(
  path.dirname(path.dirname(fileURLToPath(import.meta.url))),
  "tools",
);

/** The node's folders that cover the real ones, in mount order (a parent before its children). */
const NODE_DIRS = ["etc", "var", "root", "home", "tmp", "mnt", "srv", "opt", "usr/share/keyrings"];
const NODE_FILES = ["usr/lib/os-release", "proc/sys/kernel/random/boot_id"];

/**
 * The binds of the node whose root folder is `root`. `shared` are real paths the node sees at
 * the same place (a cluster's one pmxcfs folder, which its members' `/etc/pve` link into).
 * Targets that do not exist on this machine are left out (on both sides: this table is all
 * either side knows).
 */
export function nodeBinds(root: string, shared: readonly string[] = []): Bind[] {
  const binds: Bind[] = [
    { target: "/run", source: path.join(root, "run") },
    { target: NODE_TOOLS_DIR, source: LAB_TOOLS_DIR, readOnly: true },
    { target: NODE_LAB_DIR, source: path.join(root, ".lab") },
  ];
  for (const dir of NODE_DIRS) {
    if (isDirectory(`/${dir}`)) binds.push({ target: `/${dir}`, source: path.join(root, dir) });
  }
  for (const file of NODE_FILES) {
    if (isFile(`/${file}`)) binds.push({ target: `/${file}`, source: path.join(root, file) });
  }
  for (const real of shared) binds.push({ target: real, source: real });
  return binds;
}

function isDirectory(file: string): boolean {
  return fs.statSync(file, { throwIfNoEntry: false })?.isDirectory() ?? false;
}

function isFile(file: string): boolean {
  return fs.statSync(file, { throwIfNoEntry: false })?.isFile() ?? false;
}
