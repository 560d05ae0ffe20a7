/**
 * The detached-process kit with real processes and real signals: the kill snippet run by `sh`
 * (dash on Debian, as `sudo -n sh -c` runs it) against sessions this test starts.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { sh } from "@/lib/ssh";
import { waitFor } from "@/test/worker-process";
import { killSessionSnippet, ownedLeaderSnippet } from "./detached-process";

const run = promisify(execFile);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "clupilot-detached-"));
const LEADER = path.join(dir, "run.sh");
const ARGV = 'bash "$d/run.sh" "$d"';
const started: ChildProcess[] = [];

afterEach(() => {
  // Whatever a test left of a session (the unmarked survivor, a not-ours session) goes here.
  for (const child of started.splice(0)) {
    for (const member of members(child.pid!)) process.kill(member, "SIGKILL");
  }
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** A leader in its own session (`setsid`), started as the step starts one. */
async function startLeader(body: string, count: number, args: string[] = [dir]): Promise<number> {
  fs.writeFileSync(LEADER, `#!/bin/bash\nexport CLUPILOT_DETACHED="$1"\n${body}\nwait\n`);
  const child = spawn("bash", [LEADER, ...args], { detached: true, stdio: "ignore" });
  started.push(child);
  await waitFor(
    `${count} members of the session`,
    async () => members(child.pid!).length >= count,
    10_000,
    20,
  );
  return child.pid!;
}

/** Live (non-zombie) processes whose session id is `sid`. */
function members(sid: number): number[] {
  const found: number[] = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[3]) === sid && !["Z", "X"].includes(fields[0]!)) found.push(Number(entry));
    } catch {
      // ended while we looked
    }
  }
  return found;
}

async function kill(pid: number, graceSeconds = 0.5): Promise<string> {
  const script = [sh`d=${dir}`, `pid=${pid}`, killSessionSnippet(ARGV, graceSeconds)].join("\n");
  const { stdout } = await run("sh", ["-c", script]);
  return stdout.trim().split("\n").pop() ?? "";
}

describe("detached-process kill: every process of the session, each with evidence", () => {
  it("leader with the exact command line → it and every member go, one that moved to its own process group too", async () => {
    const pid = await startLeader("sleep 300 &\n(set -m; sleep 301 &) \nsleep 302 &", 4);
    expect(await kill(pid)).toBe("terminated");
    expect(members(pid)).toEqual([]);
  });

  it("a member that ignores TERM → KILL after the grace period", async () => {
    const pid = await startLeader("bash -c 'trap \"\" TERM; while :; do sleep 0.1; done' &", 2);
    expect(await kill(pid)).toBe("killed");
    expect(members(pid)).toEqual([]);
  });

  it("leader gone, members outlived it → the members carrying the build's mark go; one without it is left alone", async () => {
    const pid = await startLeader(
      'sleep 300 &\nenv -u CLUPILOT_DETACHED sleep 303 &\nkill -KILL "$$"',
      2,
    );
    await waitFor("the leader to die", async () => !members(pid).includes(pid), 5000, 20);
    const before = members(pid);
    expect(before.length).toBe(2);
    expect(await kill(pid)).toBe("terminated");
    const left = members(pid);
    expect(left).toHaveLength(1);
    expect(fs.readFileSync(`/proc/${left[0]}/cmdline`, "utf8")).toBe("sleep\u0000303\u0000");
  });

  it("a live PID whose command line only contains the leader's (not exactly it) → not ours, nothing signalled", async () => {
    const pid = await startLeader("sleep 300 &", 2, [dir, "--and-more"]);
    expect(await kill(pid)).toBe("not-ours");
    expect(members(pid).length).toBeGreaterThanOrEqual(2);
  });

  it("ownership check: exact command line → leader=1; a zombie or another command → 0", async () => {
    const pid = await startLeader("sleep 300 &", 2);
    const check = async (p: number) =>
      (
        await run("sh", [
          "-c",
          [sh`d=${dir}`, `pid=${p}`, ownedLeaderSnippet(ARGV), 'echo "$leader"'].join("\n"),
        ])
      ).stdout.trim();
    expect(await check(pid)).toBe("1");
    expect(await check(process.pid)).toBe("0");
  });
});
