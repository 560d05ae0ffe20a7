/**
 * The watch loop's pause (remote-watch.ts, `nap`): in bash a round starts no process — the loop
 * still paces itself with no `sleep` on its PATH — and in dash it falls back to `sleep`.
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { sh } from "@/lib/ssh";
import {
  printSignature,
  takeSignature,
  watchSawChange,
  watchStatusCommand,
  WATCH_ROUND_SECONDS,
} from "./remote-watch";

const run = promisify(execFile);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "clupilot-nap-"));
const status = path.join(dir, "status");
const bin = path.join(dir, "bin");
fs.mkdirSync(status);
fs.writeFileSync(path.join(status, "state"), "running\n");
// What the loop may run besides its shell's builtins, and not `sleep`.
fs.mkdirSync(bin);
for (const tool of ["mktemp", "mkfifo", "rm", "cksum"])
  fs.symlinkSync(which(tool), path.join(bin, tool));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function which(tool: string): string {
  for (const d of ["/usr/bin", "/bin"])
    if (fs.existsSync(path.join(d, tool))) return path.join(d, tool);
  throw new Error(`${tool} not found`);
}

const SECONDS = 3;
const ROUNDS = Math.floor((SECONDS - 1) / WATCH_ROUND_SECONDS);

const watched = { dir: sh`${status}`, files: ["state"], pidFiles: [] };

async function watch(shell: string, searchPath: string) {
  const env = { ...process.env, PATH: searchPath };
  const read = await run(shell, ["-c", printSignature(watched)], { env });
  const baseline = takeSignature(read.stdout).signature!;
  const started = Date.now();
  const { stdout } = await run(shell, ["-c", watchStatusCommand(watched, baseline, SECONDS)], {
    env,
    timeout: 20_000,
  });
  return {
    changed: watchSawChange(stdout),
    rounds: stdout.split(".").length - 1,
    ms: Date.now() - started,
  };
}

describe("the watch loop's pause", () => {
  it("bash: the rounds are paced with no sleep on PATH", async () => {
    const result = await watch("/bin/bash", bin);
    expect(result.changed).toBe(false);
    expect(result.rounds).toBe(ROUNDS);
    expect(result.ms).toBeGreaterThanOrEqual(ROUNDS * WATCH_ROUND_SECONDS * 1000 * 0.9);
  });

  it("dash: sleep paces the rounds", async () => {
    const result = await watch("/bin/sh", "/usr/bin:/bin");
    expect(result.changed).toBe(false);
    expect(result.rounds).toBe(ROUNDS);
    expect(result.ms).toBeGreaterThanOrEqual(ROUNDS * WATCH_ROUND_SECONDS * 1000 * 0.9);
  });

  it("bash: a change still ends the watch within a round", async () => {
    const pending = watch("/bin/bash", bin);
    setTimeout(() => fs.writeFileSync(path.join(status, "state"), "ok\n"), 700);
    const result = await pending;
    fs.writeFileSync(path.join(status, "state"), "running\n");
    expect(result.changed).toBe(true);
    expect(result.rounds).toBeLessThan(ROUNDS);
  });
});
