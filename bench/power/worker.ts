import path from "node:path";
import type { ImageServer } from "@/lab";
import { labOnboardingConfig, type InFlight } from "./onboarding-load";
import type { LoadRequest } from "./onboarding-load-process";
import type { PowerWorkerSettings } from "./worker-process";
import { exitOf, spawnUntilEnd } from "../support/processes";

/**
 * Starts bench/power/worker-process.ts (the console's worker side: power runner, power monitor,
 * onboarding) against the bench's database; stopped when the bench ends. Resolves once it runs.
 */
export async function startPowerWorker(url: string, image: ImageServer): Promise<void> {
  const settings: PowerWorkerSettings = { url, onboarding: await labOnboardingConfig(image) };
  const child = spawnUntilEnd(
    "worker process",
    process.execPath,
    ["--import", "tsx", path.join(import.meta.dirname, "worker-process.ts")],
    {
      env: { ...process.env, BENCH_POWER_WORKER: JSON.stringify(settings) },
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
