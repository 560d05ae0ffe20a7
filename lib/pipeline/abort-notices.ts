/**
 * The operator's abort reaching a visit in flight (docs/pipeline.md, "Retry and Abort"): the
 * engine registers each visit while it runs, and the worker's LISTEN (worker/run-notices.ts)
 * reports each abort request as it commits. A notice missed (the LISTEN connection was down)
 * costs only time: the tick still finds the request when it persists the visit.
 */
export type AbortNotices = {
  /** While a visit of `runId` runs; returns the function that ends the registration. */
  during(runId: string, onAbort: () => void): () => void;
  /** An abort request for `runId` committed. */
  requested(runId: string): void;
};

export function createAbortNotices(): AbortNotices {
  const visits = new Map<string, Set<() => void>>();
  return {
    during(runId, onAbort) {
      const set = visits.get(runId) ?? new Set();
      set.add(onAbort);
      visits.set(runId, set);
      return () => {
        set.delete(onAbort);
        if (set.size === 0 && visits.get(runId) === set) visits.delete(runId);
      };
    },
    requested(runId) {
      for (const onAbort of [...(visits.get(runId) ?? [])]) onAbort();
    },
  };
}
