import { spawn, type ChildProcess } from "node:child_process";
import type { Service, ServiceRun } from "./supervisor";
import { SUPERVISOR_PID_ENV } from "./supervisor-pid";

/**
 * A service that is a child process (the worker, the web server).
 *
 * Each run gets its own process group (`detached`): a Ctrl-C in the terminal reaches only the
 * supervisor, which stops the children in order, instead of every process at once racing the
 * supervisor's restarts. The group also takes anything the child started: stopping signals the
 * whole group, and whatever is left of the group once the child is gone is killed — a leftover
 * grandchild holding the web server's port would make every restart fail.
 */
export function childProcessService(options: {
  name: string;
  command: string;
  args: string[];
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** How long a stopping child may take after SIGTERM before it gets SIGKILL. */
  stopGraceMs?: number;
}): Service {
  const graceMs = options.stopGraceMs ?? 10_000;
  return {
    name: options.name,
    start: () =>
      new Promise<ServiceRun>((resolve, reject) => {
        const child = spawn(options.command, options.args, {
          cwd: options.cwd,
          // A child that loads end-with-supervisor.ts stops by itself once this process is gone.
          env: { ...(options.env ?? process.env), [SUPERVISOR_PID_ENV]: String(process.pid) },
          stdio: "inherit",
          detached: true,
        });
        child.once("error", reject); // could not be spawned at all (no such command, …)
        child.once("spawn", () => {
          child.off("error", reject);
          // Later errors (a signal that could not be sent) must not end the supervisor.
          child.on("error", () => {});
          const ended = new Promise<string>((done) =>
            child.once("exit", (code, signal) => {
              signalGroup(child, "SIGKILL");
              done(describeExit(code, signal));
            }),
          );
          resolve({ ended, stop: () => stopChild(child, ended, graceMs), pid: child.pid });
        });
      }),
  };
}

/** How a child ended, as the log and the banner say it. */
export function describeExit(code: number | null, signal: NodeJS.Signals | null): string {
  if (signal) return `killed by ${signal}`;
  if (code === 0) return "exit code 0, though it should run until stopped";
  return `exit code ${code}`;
}

/** SIGTERM to the child's group, SIGKILL after the grace period; resolves once the child is gone. */
async function stopChild(child: ChildProcess, ended: Promise<string>, graceMs: number) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const timer = setTimeout(() => signalGroup(child, "SIGKILL"), graceMs);
  signalGroup(child, "SIGTERM");
  await ended;
  clearTimeout(timer);
}

/**
 * Signals the child's process group. Its id is the child's pid, and the kernel does not hand
 * that number to another process while any member of the group is alive, so this reaches the
 * child's own processes only; an empty group is simply not there (ESRCH).
 */
function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // the group is gone already
  }
}
