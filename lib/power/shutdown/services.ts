import type { Database } from "@/lib/db/client";
import type { RunLogSink, RunRef } from "@/lib/pipeline/step";

/** What the power-shutdown steps get for one tick. */
export type PowerServices = {
  db: Database;
  /** Masks a secret the steps just unsealed (an API token) in the run's log. */
  maskSecret(value: string): void;
};

export function createPowerServices(
  run: RunRef & RunLogSink,
  db: Database,
): { services: PowerServices; dispose(): Promise<void> } {
  return { services: { db, maskSecret: run.maskSecret }, dispose: async () => {} };
}
