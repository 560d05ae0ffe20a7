import type { ChildProcess } from "node:child_process";

/** True while the child has neither exited nor been killed. */
export function isRunning(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

/**
 * Stops a test peer's process: SIGCONT first (a stopped process would not act on SIGTERM),
 * SIGTERM, and SIGKILL if it has not exited 2 s later.
 */
export async function terminate(child: ChildProcess): Promise<void> {
  if (!isRunning(child)) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGCONT");
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 2000);
  await exited;
  clearTimeout(timer);
}
