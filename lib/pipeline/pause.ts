import { setTimeout as delay } from "node:timers/promises";

/**
 * Waits `ms`, or until `signal` aborts (at once if it already has). Never rejects: a waiter that
 * pauses between two looks checks the signal itself and stops there.
 */
export async function pause(ms: number, signal: AbortSignal): Promise<void> {
  await delay(ms, undefined, { signal }).catch((error: unknown) => {
    if (!signal.aborted) throw error;
  });
}
