import type { Database } from "@/lib/db/client";
import { startRun } from "@/lib/runs/start-run";
import type { ShutdownInput } from "../shutdown/shutdown-plan";
import { powerShutdownPipeline } from "./pipeline";

export const POWER_MONITOR_ACTOR = "power monitor";

/** Starts a power-shutdown run for the due targets, in the caller's transaction. */
export function startShutdownRun(
  tx: Pick<Database, "insert" | "execute">,
  input: ShutdownInput,
): Promise<string> {
  return startRun(tx, {
    pipeline: powerShutdownPipeline,
    hostId: null,
    actor: POWER_MONITOR_ACTOR,
    context: { input },
  });
}
