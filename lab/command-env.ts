import path from "node:path";
import { fileURLToPath } from "node:url";

import type { HostRootPaths } from "./host-root";

/** Simulated host tools (`uname`, `qm`, `pvesm`, …), first on every lab command's PATH. */
export const LAB_TOOLS_BIN = path.join(
  path.dirname(fileURLToPath(import.meta.url)),
  "tools",
  "bin",
);

/**
 * The complete environment of every command a lab host's SSH server runs (nothing is inherited
 * from the lab's process): the simulated tools first on PATH, and the host root that product
 * commands prefix their paths with. Standalone nodes and cluster nodes share it.
 */
export function labCommandEnv(paths: HostRootPaths, username: string): Record<string, string> {
  const { root } = paths;
  return {
    PATH: `${LAB_TOOLS_BIN}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`,
    HOME: paths.home,
    USER: username,
    LOGNAME: username,
    SHELL: "/bin/bash",
    LANG: "C.UTF-8",
    TMPDIR: path.join(root, "tmp"),
    CLUPILOT_HOST_ROOT: root,
    CLUPILOT_STATE_DIR: paths.stateDir,
    // The scripts in deploy/ read the real paths by default; these point them into the lab.
    CLUPILOT_STORAGE_CFG: path.join(root, "etc/pve/storage.cfg"),
    CLUPILOT_IMAGE_DIR: path.join(paths.stateDir, "images"),
  };
}
