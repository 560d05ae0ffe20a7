import type { LabNode } from "@/lab";
import { DRIVER_NAME } from "@/lib/steps/onboarding/build-vm-template/commands";
import { isLive, type ProcessInfo } from "./proc";

/**
 * A template build on a lab node, as the node's process table shows it: the driver
 * (`bash /var/lib/clupilot/template-build/template-run.sh …` in the node's mount namespace,
 * started with `setsid`, so it leads its own process group) and every process of that group
 * (its subshells and the tools it runs).
 */
export type BuildGroup = { pgid: number; members: ProcessInfo[] };

export function buildGroupsOn(
  node: Pick<LabNode, "mountNamespace">,
  table: readonly ProcessInfo[],
): BuildGroup[] {
  const groups = new Set(table.filter((p) => isLive(p) && isDriverOf(node, p)).map((p) => p.pgid));
  return [...groups]
    .sort((a, b) => a - b)
    .map((pgid) => ({ pgid, members: table.filter((p) => p.pgid === pgid && isLive(p)) }));
}

/** Live processes of groups that once were a build's on this node (a killed driver's children). */
export function leftoversOf(
  groups: ReadonlySet<number>,
  table: readonly ProcessInfo[],
): ProcessInfo[] {
  return table.filter((p) => groups.has(p.pgid) && isLive(p));
}

/**
 * `bash /…/template-run.sh /…/build.env` among the node's processes: the driver itself (and its
 * subshells, which keep its arguments) — not the SSH command that started it, whose `bash -c`
 * script merely names the driver. Every node's driver has the same path: the node is told by
 * the mount namespace. A node that is down (a reboot under way) has none, and runs nothing.
 */
export function isDriverOf(
  node: Pick<LabNode, "mountNamespace">,
  process: Pick<ProcessInfo, "cmdline" | "mountNamespace">,
): boolean {
  const [shell, script] = process.cmdline.split(" ");
  return (
    node.mountNamespace !== null &&
    process.mountNamespace === node.mountNamespace &&
    shell !== undefined &&
    /(^|\/)bash$/.test(shell) &&
    script !== undefined &&
    script.startsWith("/") &&
    script.endsWith(`/${DRIVER_NAME}`)
  );
}
