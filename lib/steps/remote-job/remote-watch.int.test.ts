import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { liveGroupMembers, startLab, waitUntil, type LabNode } from "@/lab";
import { labSession } from "@/lab/test-helpers";
import { sh, SshChannelError, type SshSession } from "@/lib/ssh";
import {
  printSignature,
  takeSignature,
  watchSawChange,
  watchStatusCommand,
  type WatchedStatus,
} from "./remote-watch";

let node: LabNode;
let session: SshSession;
let dir: string;
let watched: WatchedStatus;

beforeAll(async () => {
  node = await startLab();
  session = await labSession(node, { pinnedHostKey: node.ssh.hostKeySha256 });
  // The node's /var is its own folder's (lab/namespace): written here, read there.
  const nodeDir = "/var/lib/clupilot/watch-test";
  dir = path.join(node.root, nodeDir);
  fs.mkdirSync(dir, { recursive: true });
  watched = { dir: sh`${nodeDir}`, files: ["state", "phase"], pidFiles: ["pid", "lock"] };
});
afterAll(async () => {
  session?.close();
  await node?.stop();
});

const write = (file: string, text: string) => fs.writeFileSync(path.join(dir, file), text);

async function signature(): Promise<string> {
  const { signature } = takeSignature((await session.exec(printSignature(watched))).stdout);
  expect(signature).toMatch(/^\d+ \d+$/);
  return signature!;
}

/**
 * Runs the loop against `baseline`; resolves with whether it saw a change, how long it took, and
 * how many rounds it waited (the dot each round prints). `onRound` runs as each dot arrives.
 */
async function watch(baseline: string, seconds: number, onRound?: (round: number) => void) {
  const started = Date.now();
  let rounds = 0;
  const result = await session.exec(watchStatusCommand(watched, baseline, seconds), {
    timeoutMs: seconds * 1000 + 10_000,
    onOutput: (stream, chunk) => {
      if (stream !== "stdout") return;
      for (const byte of chunk) if (byte === 0x2e) onRound?.(++rounds);
    },
  });
  expect(result.code).toBe(0);
  return { changed: watchSawChange(result.stdout), ms: Date.now() - started, rounds };
}

describe("the watch loop over real SSH (remote-watch.ts)", () => {
  it("the signature is stable while nothing the visit decides on changes, a running process's scheduler state included", async () => {
    const busy = spawn("sh", ["-c", "while :; do :; done"], { stdio: "ignore" });
    try {
      write("state", "running\n");
      write("phase", "customise image\n");
      write("pid", `${busy.pid}\n`);
      const base = await signature();
      // The CPU hog flips between R and S under load: still "alive", still the same.
      const { changed, ms } = await watch(base, 3);
      expect(changed).toBe(false);
      expect(ms).toBeGreaterThanOrEqual(1500);
      expect(await signature()).toBe(base);
    } finally {
      busy.kill("SIGKILL");
    }
  });

  it("returns `changed` once a new phase, a new state, or the PID's end comes while it waits, not at its cap", async () => {
    const sleeper = spawn("sleep", ["60"], { stdio: "ignore" });
    write("state", "running\n");
    write("phase", "fetch image\n");
    write("pid", `${sleeper.pid}\n`);
    for (const change of [
      () => write("phase", "verify structure\n"),
      () => write("state", "ok\n"),
      () => sleeper.kill("SIGKILL"),
    ]) {
      const base = await signature();
      // Made once the loop is in its rounds (its first dot came), so only a round can see it. How
      // soon that is (a round is WATCH_ROUND_SECONDS) is bench:ssh's to measure.
      let made = false;
      const { changed } = await watch(base, 20, (round) => {
        if (round !== 1) return;
        change();
        made = true;
      });
      expect(made).toBe(true);
      // At its cap (20 s) the loop says `unchanged`: `changed` is the change seen.
      expect(changed).toBe(true);
    }
  });

  it("a baseline that no longer holds returns at once: nothing between the visit's read and the watch is missed", async () => {
    write("phase", "make working copy\n");
    const base = await signature();
    write("phase", "customise image\n");
    const { changed, rounds } = await watch(base, 20);
    expect(changed).toBe(true);
    // Before its first round: the check against the baseline itself saw it.
    expect(rounds).toBe(0);
  });

  it("a phase that is not UTF-8 round-trips through the console: the watch waits instead of returning at once", async () => {
    fs.writeFileSync(path.join(dir, "phase"), Buffer.from([0x63, 0xff, 0xfe, 0x0a]));
    const { changed } = await watch(await signature(), 2.5);
    expect(changed).toBe(false);
  });

  it("ends by itself once the console's side of the channel is gone (a dropped connection)", async () => {
    const doomed = await labSession(node, { pinnedHostKey: node.ssh.hostKeySha256 });
    const base = await signature();
    const since = node.commands.length;
    node.faults.dropAfterMs = 300;
    try {
      await expect(
        doomed.exec(watchStatusCommand(watched, base, 60), { timeoutMs: 70_000 }),
      ).rejects.toBeInstanceOf(SshChannelError);
    } finally {
      node.faults.dropAfterMs = null;
      doomed.close();
    }
    const loop = node.commands.slice(since).find((c) => c.command.includes("clupilot_sig"));
    expect(loop).toBeDefined();
    // Its next dot hits the closed pipe: SIGPIPE, within a round or two, not the 60 s cap.
    await waitUntil(() => liveGroupMembers(loop!.pid).length === 0, {
      timeoutMs: 3000,
      what: "the watch loop to end",
    });
  });
});
