import { useQueryClient, type QueryClient, type QueryKey } from "@tanstack/react-query";
import { useMemo } from "react";
import { serialRerun } from "@/lib/live/serial-rerun";

/** Resolves once the query has no fetch running (at once when it has none). */
function fetchIdle(queryClient: QueryClient, queryKey: QueryKey): Promise<void> {
  const cache = queryClient.getQueryCache();
  const query = cache.find({ queryKey, exact: true });
  if (!query || query.state.fetchStatus === "idle") return Promise.resolve();
  return new Promise((resolve) => {
    const unsubscribe = cache.subscribe(() => {
      if (query.state.fetchStatus !== "idle") return;
      unsubscribe();
      resolve();
    });
  });
}

/**
 * One refresh of a query after a live message said it changed: a fetch that *starts after* the
 * message. A fetch already running may have started before the change it announces — joining
 * it (`cancelRefetch: false` alone) kept the run panel on "in progress" after its run had
 * ended — and cancelling it would starve the page when messages come faster than answers. So:
 * let the running fetch finish, then ask anew.
 */
async function refetchAfterNow(queryClient: QueryClient, queryKey: QueryKey): Promise<void> {
  await fetchIdle(queryClient, queryKey);
  await queryClient.invalidateQueries({ queryKey }, { cancelRefetch: false });
}

/**
 * Refreshes the power queries a live message made stale, without starving them. The monitor
 * sends a message per UPS reading (every second): a refresh is never cancelled for the next
 * message; one more follows it, however many messages came meanwhile, and it asks after them.
 */
export function powerRefresher(
  queryClient: QueryClient,
  stopped: () => boolean,
): (keys: readonly QueryKey[]) => void {
  const passes = new Map<string, () => Promise<void>>();
  return (keys) => {
    for (const queryKey of keys) {
      const id = JSON.stringify(queryKey);
      let pass = passes.get(id);
      if (!pass) {
        pass = serialRerun(() => refetchAfterNow(queryClient, queryKey), stopped);
        passes.set(id, pass);
      }
      void pass();
    }
  };
}

/** The same for one component's own query: call it for each live message that concerns it. */
export function useLiveRefresh(queryKey: QueryKey): () => void {
  const queryClient = useQueryClient();
  const id = JSON.stringify(queryKey);
  return useMemo(() => {
    const key = JSON.parse(id) as QueryKey;
    const pass = serialRerun(
      () => refetchAfterNow(queryClient, key),
      () => false,
    );
    return () => void pass();
  }, [queryClient, id]);
}
