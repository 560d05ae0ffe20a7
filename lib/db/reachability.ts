import { safeErrorSummary } from "@/lib/errors";
import { isAftermathOfLoss } from "./unreachable";

/**
 * Whether this process can reach its database, as its own calls last found out. While the
 * database is away every poll, heartbeat and request fails the same way; the log gets one line
 * when it goes away and one when it is back, not one per failed call.
 */
export type Reachability = {
  /**
   * A call failed because the database is away (see isDatabaseUnreachable). A query on a client
   * that broke earlier is not counted: that loss was reported when it happened.
   */
  lost(error: unknown): void;
  /** A call got an answer from the database. */
  answered(): void;
  readonly reachable: boolean;
  /** When the database last came back after being away (null: it never was away). */
  readonly backSince: number | null;
};

export function trackReachability(options: {
  log: (line: string) => void;
  /** What this process does meanwhile, for the log line ("ticks wait …", "answering 503 …"). */
  meanwhile: string;
  now?: () => number;
}): Reachability {
  const now = options.now ?? Date.now;
  let awaySince: number | null = null;
  let backSince: number | null = null;
  return {
    lost(error) {
      if (awaySince !== null || isAftermathOfLoss(error)) return;
      awaySince = now();
      options.log(`database unreachable (${safeErrorSummary(error)}); ${options.meanwhile}`);
    },
    answered() {
      if (awaySince === null) return;
      backSince = now();
      const seconds = ((backSince - awaySince) / 1000).toFixed(1);
      awaySince = null;
      options.log(`database reachable again after ${seconds} s`);
    },
    get reachable() {
      return awaySince === null;
    },
    get backSince() {
      return backSince;
    },
  };
}

// Next.js bundles its own copy of this module beside the web server's: the tracker lives on
// globalThis so that both, and every pool of the process, share one.
const globalForReachability = globalThis as unknown as { __clupilotReachability?: Reachability };

/**
 * The process's one view of its database, for the pools of getDb() and the web server's gate: a
 * restart is one line in the log however many of them notice it.
 */
export function processReachability(): Reachability {
  globalForReachability.__clupilotReachability ??= trackReachability({
    log: (line) => console.error(line),
    meanwhile: "retrying until it is back",
  });
  return globalForReachability.__clupilotReachability;
}
