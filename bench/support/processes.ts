import { spawn, type ChildProcess, type SpawnOptions } from "node:child_process";
import { stopAtEnd } from "./run-bench";

/**
 * A child process of a bench, in its own process group (it and whatever it spawns), stopped
 * when the bench ends however it ends. Its own group also keeps the terminal's Ctrl-C away from
 * it: the bench decides the order things stop in.
 */
export function spawnUntilEnd(
  label: string,
  command: string,
  args: string[],
  options: Omit<SpawnOptions, "detached">,
): ChildProcess {
  const child = spawn(command, args, { ...options, detached: true });
  stopAtEnd(label, () => stopProcessGroup(child));
  return child;
}

/** The child's exit code (or signal name); rejects when it could not be started at all. */
export function exitOf(child: ChildProcess): Promise<number | string> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  if (child.signalCode !== null) return Promise.resolve(child.signalCode);
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", (code, signal) => resolve(code ?? signal ?? "unknown"));
  });
}

/**
 * SIGTERM to the child's process group, then SIGKILL to whatever of the group is left once the
 * leader has exited or `graceMs` have passed. Resolves once the leader has exited. A child that
 * had already exited is left alone: its group id may belong to someone else by now.
 */
export async function stopProcessGroup(child: ChildProcess, graceMs = 10_000): Promise<void> {
  const group = child.pid;
  if (group === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = exitOf(child).catch(() => "not started");
  signalGroup(group, "SIGTERM");
  let timer: NodeJS.Timeout | undefined;
  const graceOver = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)));
  await Promise.race([exited, graceOver]);
  clearTimeout(timer);
  signalGroup(group, "SIGKILL"); // what the leader left behind, or a leader that ignored SIGTERM
  await exited;
}

function signalGroup(group: number, signal: NodeJS.Signals) {
  try {
    process.kill(-group, signal);
  } catch {
    // no process of the group is left
  }
}
