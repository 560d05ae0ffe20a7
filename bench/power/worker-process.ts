/**
 * The bench's worker process (`node --import tsx bench/power/worker-process.ts`, started by
 * bench/power.ts): what the console's worker runs for power — graphile-worker with the
 * power-shutdown pipeline on its own runner, and the power monitor (one loop per UPS) — plus
 * the onboarding pipeline the `--load` round keeps busy, and the short pipeline that gives the
 * protected lab node its API token and pinned certificate. A process of its own, so the lab's
 * servers (in the bench process) do not share its event loop.
 */
import { monitorEventLoopDelay } from "node:perf_hooks";
import { startPowerMonitor } from "@/lib/power/monitor/power-monitor";
import { powerShutdownPipeline } from "@/lib/power/shutdown/pipeline";
import { createOnboardHostPipeline } from "@/lib/steps/host";
import type { OnboardingConfig } from "@/lib/steps/host/config";
import { startWorker } from "@/worker/runner";
import { hostAccessPipeline } from "./host-access";

export type PowerWorkerSettings = { url: string; onboarding: OnboardingConfig };

async function main() {
  const { url, onboarding } = JSON.parse(process.env.BENCH_POWER_WORKER!) as PowerWorkerSettings;
  const onboard = createOnboardHostPipeline(onboarding);
  const worker = await startWorker({
    connectionString: url,
    pipelines: {
      [onboard.name]: onboard,
      [hostAccessPipeline.name]: hostAccessPipeline,
      [powerShutdownPipeline.name]: powerShutdownPipeline,
    },
    periodicChecks: false,
    log: () => {},
  });
  const monitor = await startPowerMonitor({
    connectionString: url,
    log: (line) => console.error(`[bench worker] ${line}`),
  });
  process.send!({ ready: true });
  if (process.env.BENCH_POWER_LOOP_DELAY === "1") {
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    setInterval(() => {
      const ms = (ns: number) => (ns / 1e6).toFixed(0);
      console.error(
        `[bench worker] event-loop delay p50 ${ms(delay.percentile(50))} ms, p99 ${ms(delay.percentile(99))} ms, max ${ms(delay.max)} ms`,
      );
      delay.reset();
    }, 15_000).unref();
  }
  // Stopped by the bench with SIGTERM (its process group): the monitor hands its lease back.
  process.once("SIGTERM", () => {
    void Promise.all([monitor.stop(), worker.stop()]).then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}

main().catch((error: Error) => {
  console.error(error);
  process.exit(1);
});
