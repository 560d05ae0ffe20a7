import type { HostRootPaths } from "./host-root";
import { NODE_TOOLS_BIN } from "./namespace/layout";

/** Simulated host tools (`uname`, `qm`, `pvesm`, …), first on every lab command's PATH. */
export const LAB_TOOLS_BIN = NODE_TOOLS_BIN;

/**
 * The complete environment of every command a lab host's SSH server runs (nothing is inherited
 * from the lab's process), as sshd gives a root session: the simulated tools first on PATH (the
 * lab's namespace puts them at /run/clupilot-lab/tools/bin), the user's home. Nothing else:
 * product commands read the host's real paths, which the namespace makes the host's own.
 * Standalone nodes and cluster nodes share it.
 */
export function labCommandEnv(paths: HostRootPaths, username: string): Record<string, string> {
  return {
    PATH: `${LAB_TOOLS_BIN}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`,
    HOME: paths.home,
    USER: username,
    LOGNAME: username,
    SHELL: "/bin/bash",
    LANG: "C.UTF-8",
  };
}
