import path from "node:path";
import type { ImageServer } from "@/lab";
import { labOnboardingConfig, type InFlight } from "./onboarding-load";
import type { LoadRequest } from "./onboarding-load-process";
import type { PowerWorkerSettings, WorkerStats } from "./worker-process";
import { exitOf, spawnUntilEnd } from "../support/processes";

export type PowerWorkerProcess = {
  /** The process's CPU, event-loop delay and queries since the last ask (worker-process.ts). */
  stats(): Promise<WorkerStats>;
};

/**
 * Starts bench/power/worker-process.ts (the console's worker side: power runner, power monitor,
 * onboarding when `image` is given) against the bench's database; stopped when the bench ends.
 * Resolves once it runs. `env` is added to its environment (BENCH_POWER_CONCURRENCY, …).
 */
export async function startPowerWorker(
  url: string,
  image: ImageServer | null,
  env: Record<string, string> = {},
): Promise<PowerWorkerProcess> {
  const settings: PowerWorkerSettings = {
    url,
    onboarding: image ? await labOnboardingConfig(image) : null,
  };
  const child = spawnUntilEnd(
    "worker process",
    process.execPath,
    [
      // BENCH_POWER_CPU_PROF=<folder>: a V8 CPU profile of the worker's whole life, written there.
      ...(process.env.BENCH_POWER_CPU_PROF
        ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_POWER_CPU_PROF}`]
        : []),
      "--import",
      "tsx",
      path.join(import.meta.dirname, "worker-process.ts"),
    ],
    {
      env: { ...process.env, ...env, BENCH_POWER_WORKER: JSON.stringify(settings) },
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    },
  );
  const exited = exitOf(child).then((code) => {
    throw new Error(`the worker process exited (${code})`);
  });
  exited.catch(() => {});
  await Promise.race([
    new Promise<void>((resolve) => child.once("message", () => resolve())),
    exited,
  ]);
  return {
    stats: () => {
      const answer = Promise.race([
        new Promise<WorkerStats>((resolve) => {
          const listen = (message: { stats?: WorkerStats }) => {
            if (!message.stats) return;
            child.off("message", listen);
            resolve(message.stats);
          };
          child.on("message", listen);
        }),
        exited,
      ]);
      child.send({ stats: true });
      return answer;
    },
  };
}

export type OnboardingLoadProcess = {
  inFlight(): Promise<InFlight>;
  /** Stops the load (its lab nodes); resolves with the onboardings that ended meanwhile. */
  stop(): Promise<{ finished: number; failed: number }>;
};

/** Starts bench/power/onboarding-load-process.ts: `count` onboardings kept in flight. */
export async function startOnboardingLoad(
  url: string,
  count: number,
): Promise<OnboardingLoadProcess> {
  const child = spawnUntilEnd(
    "onboarding load",
    process.execPath,
    ["--import", "tsx", path.join(import.meta.dirname, "onboarding-load-process.ts")],
    {
      env: { ...process.env, BENCH_POWER_LOAD: JSON.stringify({ url, count }) },
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    },
  );
  const exited = exitOf(child).then((code) => {
    throw new Error(`the onboarding load process exited (${code})`);
  });
  exited.catch(() => {});
  /** The child's next message that has `key`. */
  const next = <T>(key: string) =>
    Promise.race([
      new Promise<T>((resolve) => {
        const listen = (message: Record<string, unknown>) => {
          if (!(key in message)) return;
          child.off("message", listen);
          resolve(message as T);
        };
        child.on("message", listen);
      }),
      exited,
    ]);
  const ask = <T>(request: LoadRequest, key: string) => {
    const answer = next<T>(key);
    child.send(request);
    return answer;
  };
  await next("ready");
  return {
    inFlight: async () =>
      (await ask<{ inFlight: InFlight }>({ inFlight: true }, "inFlight")).inFlight,
    stop: () => ask<{ finished: number; failed: number }>({ stop: true }, "finished"),
  };
}
