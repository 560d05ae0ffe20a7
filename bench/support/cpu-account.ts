import fs from "node:fs";
import path from "node:path";
import { stopAtEnd } from "./run-bench";

/**
 * The CPU of a set of processes and of everything they start, detached ones included
 * (`setsid nohup`, a double fork): a cgroup of their own, whose counter the kernel keeps.
 * A process's own /proc counters miss a child that left its tree (it is reaped by init, not by
 * the process), and the lab's template builds and apt jobs are started exactly so.
 *
 * cgroup v1's `cpuacct` or a cgroup v2 hierarchy, whichever this machine has writable (root
 * only); null elsewhere, and the caller says which measure it fell back to.
 */
export type CpuAccount = {
  /** Where the counter lives (for the report). */
  readonly path: string;
  /** CPU seconds of every process that was ever in the account (the kernel's counter). */
  seconds(): number;
  /** Puts a running process (all its threads) into the account; its children follow it. */
  join(pid: number): void;
  /** A shell line that puts the shell itself into the account; an exec after it stays in. */
  joinLine(): string;
  /** Moves what is left in it back to the root and removes it (also done when the bench ends). */
  close(): void;
};

type Hierarchy = { root: string; usage(dir: string): number };

const HIERARCHIES: Hierarchy[] = [
  // v1: nanoseconds in cpuacct.usage.
  {
    root: "/sys/fs/cgroup/cpuacct",
    usage: (dir) => Number(fs.readFileSync(path.join(dir, "cpuacct.usage"), "utf8")) / 1e9,
  },
  // v2 (unified, or hybrid's unified mount): usage_usec in cpu.stat, kept without a controller.
  ...["/sys/fs/cgroup/unified", "/sys/fs/cgroup"].map((root) => ({
    root,
    usage: (dir: string) => {
      const line = fs
        .readFileSync(path.join(dir, "cpu.stat"), "utf8")
        .split("\n")
        .find((l) => l.startsWith("usage_usec "));
      if (line === undefined) throw new Error(`${dir}/cpu.stat has no usage_usec`);
      return Number(line.split(" ")[1]) / 1e6;
    },
  })),
];

/**
 * A fresh cgroup `clupilot-bench-<pid>-<name>`, removed when the bench ends (its processes
 * moved back to the root first), or null where none can be made.
 */
export function openCpuAccount(name: string): CpuAccount | null {
  for (const hierarchy of HIERARCHIES) {
    const dir = path.join(hierarchy.root, `clupilot-bench-${process.pid}-${name}`);
    try {
      fs.mkdirSync(dir);
    } catch {
      continue; // not mounted, not writable, or a v1 layout under this name
    }
    try {
      hierarchy.usage(dir);
    } catch {
      fs.rmdirSync(dir);
      continue;
    }
    const procs = path.join(dir, "cgroup.procs");
    let closed = false;
    const close = () => {
      if (closed) return;
      closed = true;
      // Whatever is left (this process, at the least) goes back to the root so rmdir can work.
      for (const pid of fs.readFileSync(procs, "utf8").split("\n").filter(Boolean)) {
        try {
          fs.writeFileSync(path.join(hierarchy.root, "cgroup.procs"), pid);
        } catch {
          // exited meanwhile
        }
      }
      fs.rmdirSync(dir);
    };
    stopAtEnd(`the cgroup ${dir}`, close);
    return {
      path: dir,
      seconds: () => hierarchy.usage(dir),
      join: (pid) => fs.writeFileSync(procs, String(pid)),
      joinLine: () => `echo $$ > '${procs}'`,
      close,
    };
  }
  return null;
}
