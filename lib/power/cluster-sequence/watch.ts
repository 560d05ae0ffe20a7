import { setTimeout as delay } from "node:timers/promises";

/**
 * How long one visit of a cluster step keeps watching for what it waits on before it hands back
 * to the engine (which commits its progress and sees an Abort): short enough for both, long
 * enough that the engine's own scheduling between visits does not add to every wait.
 */
export const WATCH_PER_VISIT_MS = 2000;

export type Look<T> = { done: T } | { againInMs: number };

/**
 * Looks again and again within one visit — each time after the pause the last look asked for —
 * until a look is done, the visit's watch time is up or the visit is aborted. Returns the done
 * value, or null: visit again. A wait between two steps that must not overlap is battery time;
 * asked through the engine, each ask also paid a visit's scheduling (bench:cluster).
 */
export async function watchWithinVisit<T>(
  signal: AbortSignal,
  look: () => Promise<Look<T>>,
  budgetMs = WATCH_PER_VISIT_MS,
  /** Work the visit runs beside the watch: the watch goes on past its budget until it ended. */
  beside: Promise<unknown> = Promise.resolve(),
): Promise<T | null> {
  const until = performance.now() + budgetMs;
  let besideDone = false;
  void beside.then(
    () => (besideDone = true),
    () => (besideDone = true),
  );
  for (;;) {
    const seen = await look();
    if ("done" in seen) return seen.done;
    if (signal.aborted || (besideDone && performance.now() + seen.againInMs > until)) return null;
    const slept = await delay(seen.againInMs, true, { signal }).catch(() => false);
    if (!slept) return null;
  }
}
