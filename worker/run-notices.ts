import { createLiveListener } from "@/lib/live/listener";
import type { AbortNotices } from "@/lib/pipeline/abort-notices";
import type { WaitRegistry } from "@/lib/pipeline/waits";

/**
 * The worker process's own LISTEN on the live channel (one connection): a run message that says
 * an abort was requested fires the signal of the run's visit in flight here and ends the run's
 * waiter; one that says the run ended ends its waiter. Every committed run change sends one
 * (lib/pipeline/schedule.ts notifyLive), from whichever process made it.
 */
export function listenForRunNotices(options: {
  connectionString: string;
  abortNotices: AbortNotices;
  waits: WaitRegistry;
  /** Lines about the LISTEN connection itself (lost, reconnected). */
  log: (line: string) => void;
}): { close(): Promise<void> } {
  const listener = createLiveListener({
    connectionString: options.connectionString,
    log: options.log,
    // Missed notices cost time, not correctness (the tick still reads the abort table and the
    // poll's own tick still comes): back within a second or two of the database.
    maxBackoffMs: 2_000,
  });
  const unsubscribe = listener.subscribe((event) => {
    if (event.kind !== "message" || event.message.type !== "run") return;
    const run = event.message;
    if (run.abortRequested) {
      options.abortNotices.requested(run.runId);
      options.waits.cancel(run.runId);
    } else if (run.status !== undefined && run.status !== "running") {
      options.waits.cancel(run.runId);
    }
  });
  return {
    async close() {
      unsubscribe();
      await listener.close();
    },
  };
}
