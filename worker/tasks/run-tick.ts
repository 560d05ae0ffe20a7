import { z } from "zod";
import type { Task } from "graphile-worker";
import { runTickJob, type EngineOptions } from "@/lib/pipeline/engine";

const ZRunTickPayload = z.object({ runId: z.uuid() });

/**
 * One visit of one run, and the next steps' first visits while they advance (runTickJob). A throw
 * here is an infrastructure failure; graphile-worker retries it.
 */
export function createRunTickTask(engine: EngineOptions): Task {
  return async (payload, helpers) => {
    const { runId } = ZRunTickPayload.parse(payload);
    for (const result of await runTickJob(engine, runId, helpers.abortSignal)) {
      if (result.kind === "skipped")
        helpers.logger.debug(`tick of run ${runId} skipped: ${result.reason}`);
    }
  };
}
