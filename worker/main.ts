import { databaseUrl } from "@/lib/db/client";
import { startPowerMonitor } from "@/lib/power/monitor/power-monitor";
import { pipelines } from "@/lib/registry/pipelines";
import { concurrencyFromEnv } from "./concurrency";
import { guardWorkerProcess } from "./process-guard";
import { startWorkerThroughDatabaseRestarts } from "./runner";

/** The worker process: `npm start` runs it next to the web server; it can also run alone. */
async function main() {
  const worker = await startWorkerThroughDatabaseRestarts({
    connectionString: databaseUrl(),
    pipelines,
    concurrency: concurrencyFromEnv(process.env.CLUPILOT_WORKER_CONCURRENCY),
    log: (line) => console.log(`[worker] ${line}`),
    onUnexpectedStop: (reason) => {
      console.error(`[worker] graphile-worker stopped by itself (${reason}); exiting`);
      // graphile-worker sets 57 when a newer worker migrated the schema incompatibly.
      process.exit(
        typeof process.exitCode === "number" && process.exitCode !== 0 ? process.exitCode : 1,
      );
    },
  });
  guardWorkerProcess(worker, (line) => console.error(`[worker] ${line}`));
  // The UPS monitor lives here, not in the web server: one loop per UPS whose lease this
  // process holds (lib/power/monitor).
  const monitor = await startPowerMonitor({
    connectionString: databaseUrl(),
    log: (line) => console.log(`[worker] ${line}`),
  });
  console.log(`[worker] ready (pid ${process.pid})`);
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`[worker] ${signal}: finishing the ticks in progress, then stopping`);
    // The monitor hands its UPS leases back as it stops: another worker takes over at once.
    Promise.all([monitor.stop(), worker.stop()]).then(
      () => process.exit(0),
      (error: Error) => {
        console.error(`[worker] stop failed: ${error.message}`);
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", () => stop("SIGINT"));
  process.on("SIGTERM", () => stop("SIGTERM"));
}

main().catch((error: Error) => {
  console.error(`[worker] could not start: ${error.message}`);
  process.exit(1);
});
