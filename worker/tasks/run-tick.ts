import { z } from "zod";
import type { Task } from "graphile-worker";
import { tickRun, type EngineOptions } from "@/lib/pipeline/engine";

const ZRunTickPayload = z.object({ runId: z.uuid() });

/** One visit of one run. A throw here is an infrastructure failure; graphile-worker retries it. */
export function createRunTickTask(engine: EngineOptions): Task {
  return async (payload, helpers) => {
    const { runId } = ZRunTickPayload.parse(payload);
    const result = await tickRun(engine, runId);
    if (result.kind === "skipped")
      helpers.logger.debug(`tick of run ${runId} skipped: ${result.reason}`);
  };
}
