import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";

export type WorkerProcess = {
  child: ChildProcess;
  pid: number;
  output: () => string;
  stop(): Promise<void>;
};

const root = path.resolve(import.meta.dirname, "..");

/**
 * A real worker in its own Node process (no tsx wrapper process in between, so the PID we
 * signal is the worker itself).
 */
export async function spawnWorker(
  env: Record<string, string>,
  /** The worker's entry point (it prints `ready <pid>`); default: the test pipelines' worker. */
  script = "test/fixtures/worker-process.ts",
  /** Told all output so far on every chunk, also before the worker is ready. */
  onOutput?: (output: string) => void,
): Promise<WorkerProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", script], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const take = (chunk: Buffer) => {
    output += chunk;
    onOutput?.(output);
  };
  child.stdout!.on("data", take);
  child.stderr!.on("data", take);
  const pid = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`worker did not start:\n${output}`)), 30_000);
    child.stdout!.on("data", () => {
      const match = /ready (\d+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    });
    child.on("exit", (code) => reject(new Error(`worker exited with ${code}:\n${output}`)));
  });
  return {
    child,
    pid,
    output: () => output,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
        setTimeout(() => child.kill("SIGKILL"), 10_000).unref();
      }),
  };
}

export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined | null | false>,
  timeoutMs = 30_000,
  intervalMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
