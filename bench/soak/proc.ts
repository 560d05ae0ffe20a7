import fs from "node:fs";

/** One process as /proc shows it. */
export type ProcessInfo = {
  pid: number;
  ppid: number;
  pgid: number;
  /** R, S, D, T, Z, … (stat's third field). */
  state: string;
  /** The arguments joined by spaces. */
  cmdline: string;
  /** `mnt:[…]` (a lab node's processes share their node's), null when not readable. */
  mountNamespace: string | null;
};

/** Every process on the machine (those that vanish while being read are left out). */
export function processTable(): ProcessInfo[] {
  const table: ProcessInfo[] = [];
  for (const name of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const info = readProcess(Number(name));
    if (info) table.push(info);
  }
  return table;
}

export function readProcess(pid: number): ProcessInfo | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name in parentheses may itself hold spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim();
    return {
      pid,
      state: fields[0]!,
      ppid: Number(fields[1]),
      pgid: Number(fields[2]),
      cmdline,
      mountNamespace: mountNamespaceOf(pid),
    };
  } catch {
    return null;
  }
}

function mountNamespaceOf(pid: number): string | null {
  try {
    return fs.readlinkSync(`/proc/${pid}/ns/mnt`);
  } catch {
    return null;
  }
}

/** Alive and not a zombie: a killed child whose parent never reaps it counts as gone. */
export function isLive(info: ProcessInfo): boolean {
  return info.state !== "Z" && info.state !== "X";
}

/** Sends `signal`; false when there was no such process (any more). */
export function signal(pid: number, name: NodeJS.Signals): boolean {
  try {
    process.kill(pid, name);
    return true;
  } catch {
    return false;
  }
}
