import { readdirSync, readFileSync } from "node:fs";

/**
 * True while `pid` is a live process. A zombie counts as dead: killed children of a killed
 * shell are reparented to PID 1, and in containers PID 1 does not always reap them.
 */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state !== "Z" && state !== "X";
  } catch {
    return false;
  }
}

/** Polls `check` every 20 ms until it returns true; throws after `timeoutMs`. */
/**
 * The live (not zombie) processes of a process group. `kill(-pgid, 0)` also counts zombies,
 * which a lazy PID 1 (this CI machine's init is one) may leave in the group for seconds after
 * every member died: dead is dead, whenever the reaper comes by.
 */
export function liveGroupMembers(pgid: number): number[] {
  const members: number[] = [];
  for (const entry of readdirSync("/proc")) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      // After the command name: state, ppid, pgrp, …
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(pgrp) === pgid && state !== "Z" && state !== "X") members.push(pid);
    } catch {
      // Gone between the listing and the read.
    }
  }
  return members;
}

export async function waitUntil(
  check: () => boolean | Promise<boolean>,
  { timeoutMs = 3000, what = "condition" }: { timeoutMs?: number; what?: string } = {},
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
