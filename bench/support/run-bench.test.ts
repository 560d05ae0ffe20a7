import { spawn } from "node:child_process";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { isProcessAlive, waitUntil } from "@/lab/processes";

const root = path.resolve(import.meta.dirname, "../..");

type Ended = { code: number | null; stdout: string; stderr: string; pids: number[] };

/** Every process id a case saw (fixture, launcher, sleepers): none may outlive a failed case. */
const seen = new Set<number>();
const remember = (output: string) => {
  for (const match of output.matchAll(/(?:sleeper|bench) (\d+)/g)) seen.add(Number(match[1]));
};
afterEach(() => {
  for (const pid of seen) if (isProcessAlive(pid)) process.kill(pid, "SIGKILL");
  seen.clear();
});

/**
 * Runs fixtures/bench-that-ends.ts as its own Node process; `signal` is sent once it has
 * printed `signalAt`. Resolves when it has exited, with the pids of the processes it started.
 */
function runFixture(how: string, signal?: { name: NodeJS.Signals; at: string }): Promise<Ended> {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", "bench/support/fixtures/bench-that-ends.ts", how],
    { cwd: root, stdio: ["ignore", "pipe", "pipe"] },
  );
  seen.add(child.pid!);
  let stdout = "";
  let stderr = "";
  let signalled = false;
  child.stdout.on("data", (chunk) => {
    stdout += chunk;
    remember(stdout);
    if (signal && !signalled && stdout.includes(`${signal.at}\n`)) {
      signalled = true;
      child.kill(signal.name);
    }
  });
  child.stderr.on("data", (chunk) => (stderr += chunk));
  return new Promise((resolve) =>
    child.on("exit", (code) => {
      const pids = [...stdout.matchAll(/sleeper (\d+)/g)].map((m) => Number(m[1]));
      resolve({ code, stdout, stderr, pids });
    }),
  );
}

// Each case starts a Node process with tsx: seconds on a busy machine.
describe(
  "runBench: whatever way a bench ends, what it started is stopped",
  { timeout: 30_000 },
  () => {
    it("after main returns: exit 0, everything stopped, newest first", async () => {
      const ended = await runFixture("return");
      expect(ended.code).toBe(0);
      expect(ended.pids).toHaveLength(1);
      expect(ended.pids.filter(isProcessAlive)).toEqual([]);
      expect(ended.stdout).toMatch(/^sleeper \d+\nready\nstopped last\nstopped first\n$/);
      expect(ended.stderr).toBe("");
    });

    it("after main throws: exit 1 with the error, everything stopped", async () => {
      const ended = await runFixture("throw");
      expect(ended.code).toBe(1);
      expect(ended.stderr).toMatch(/^bench failed: Error: the bench broke\n\s+at /);
      expect(ended.pids.filter(isProcessAlive)).toEqual([]);
      expect(ended.stdout).toContain("stopped last\nstopped first\n");
    });

    it("when the bench cannot run: exit 1 with what to do and no stack trace", async () => {
      const ended = await runFixture("cannot-run");
      expect(ended.code).toBe(1);
      expect(ended.stderr).toBe("bench: run `npm run build` first\n");
      expect(ended.pids.filter(isProcessAlive)).toEqual([]);
    });

    it.each([
      ["SIGINT", 130],
      ["SIGTERM", 143],
      ["SIGHUP", 129],
    ] as const)("on %s: exit %i, everything stopped", async (name, code) => {
      const ended = await runFixture("wait", { name, at: "ready" });
      expect(ended.code).toBe(code);
      expect(ended.stderr).toBe(`bench: ${name}: stopping what the bench started\n`);
      expect(ended.pids).toHaveLength(1);
      expect(ended.pids.filter(isProcessAlive)).toEqual([]);
      expect(ended.stdout).toContain("stopped last\nstopped first\n");
    });

    it("a main that returns while the bench is stopping changes nothing: one stop each, exit 130", async () => {
      const ended = await runFixture("return-on-signal", { name: "SIGINT", at: "ready" });
      expect(ended.code).toBe(130);
      expect(ended.stdout).toMatch(/^sleeper \d+\nready\nstopped last\nstopped first\n$/);
      expect(ended.pids.filter(isProcessAlive)).toEqual([]);
    });

    it("when its launcher is killed: stops by itself", async () => {
      // sh starts the bench in the background and is then killed: nobody signals the bench.
      const launcher = spawn(
        "/bin/sh",
        [
          "-c",
          `'${process.execPath}' --import tsx bench/support/fixtures/bench-that-ends.ts wait & echo "bench $!"; wait`,
        ],
        { cwd: root, stdio: ["ignore", "pipe", "pipe"] },
      );
      seen.add(launcher.pid!);
      let stdout = "";
      launcher.stdout.on("data", (chunk) => remember((stdout += chunk)));
      await waitUntil(() => /ready\n/.test(stdout), { timeoutMs: 20_000, what: "the bench" });
      const bench = Number(/bench (\d+)/.exec(stdout)![1]);
      const sleeper = Number(/sleeper (\d+)/.exec(stdout)![1]);
      launcher.kill("SIGKILL");
      await waitUntil(() => !isProcessAlive(bench), {
        timeoutMs: 20_000,
        what: "the bench to end",
      });
      expect(stdout).toContain("stopped last\nstopped first\n");
      expect(isProcessAlive(sleeper)).toBe(false);
    });

    it("on Ctrl-C while something is still starting: that is stopped too, once it has started", async () => {
      const ended = await runFixture("starting", { name: "SIGINT", at: "starting" });
      expect(ended.code).toBe(130);
      // The late sleeper started after the signal, and was stopped before the earlier ones.
      expect(ended.stdout).toMatch(/late sleeper \d+\n(ready\n)?stopped last\nstopped first\n$/);
      expect(ended.pids).toHaveLength(2);
      expect(ended.pids.filter(isProcessAlive)).toEqual([]);
    });
  },
);
