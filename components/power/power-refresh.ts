import type { QueryClient, QueryKey } from "@tanstack/react-query";
import { serialRerun } from "@/lib/live/serial-rerun";

/**
 * Refreshes the power queries a live message made stale, without starving them. The monitor
 * sends a message per UPS reading (every second): the default invalidation cancels a running
 * fetch to start anew, so on a busy machine where a fetch takes longer than a second the page
 * would never get an answer at all. Here a running refresh is left to finish and one more
 * follows it, however many messages came meanwhile.
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
        pass = serialRerun(
          () => queryClient.invalidateQueries({ queryKey }, { cancelRefetch: false }),
          stopped,
        );
        passes.set(id, pass);
      }
      void pass();
    }
  };
}
