import path from "node:path";
import type { ImageServer } from "@/lab";
import { labOnboardingConfig } from "./onboarding-load";
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
