import pg from "pg";
import type { Reachability } from "@/lib/db/reachability";

/**
 * Whether the web server's requests can reach the database, asked in front of Next.js: while it
 * is away every page and API call would fail deep inside a render or a route (a 500, an error
 * boundary, or a wait on a connection that never comes). The gate asks the database itself, at
 * most once per `freshForMs` while it answers and once per `retryEveryMs` while it does not,
 * one probe at a time however many requests arrive; requests in between go by the last answer.
 * A probe that gets no answer within `timeoutMs` counts as no answer, so nothing hangs.
 */
export type DatabaseGate = {
  reachable(): Promise<boolean>;
  readonly reachability: Reachability;
};

export const GATE_TIMINGS = { freshForMs: 1_000, retryEveryMs: 500, timeoutMs: 3_000 };

export function createDatabaseGate(options: {
  /** Resolves when the database answered a trivial query. */
  probe: () => Promise<void>;
  /**
   * The process's view of its database (processReachability()): the app's pools report to it
   * too, so a connection they lose makes the gate ask again at once, and a restart is one line.
   */
  reachability: Reachability;
  timings?: Partial<typeof GATE_TIMINGS>;
  now?: () => number;
}): DatabaseGate {
  const { freshForMs, retryEveryMs, timeoutMs } = { ...GATE_TIMINGS, ...options.timings };
  const now = options.now ?? Date.now;
  const { reachability } = options;
  let checkedAt = -Infinity;
  let probing: Promise<boolean> | null = null;

  const probeOnce = async (): Promise<boolean> => {
    let timer: NodeJS.Timeout | undefined;
    const silence = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`no answer within ${timeoutMs / 1000} s`)),
        timeoutMs,
      );
    });
    try {
      await Promise.race([options.probe(), silence]);
      reachability.answered();
    } catch (error) {
      // Whatever the reason (down, refusing logins, silent), requests cannot be served.
      reachability.lost(error);
    } finally {
      clearTimeout(timer);
      checkedAt = now();
      probing = null;
    }
    return reachability.reachable;
  };

  return {
    reachability,
    reachable() {
      const age = now() - checkedAt;
      if (age < (reachability.reachable ? freshForMs : retryEveryMs)) {
        return Promise.resolve(reachability.reachable);
      }
      probing ??= probeOnce();
      return probing;
    },
  };
}

/**
 * The probe the web server uses: `select 1` over a pool of its own (one connection), so a
 * request never waits behind the app's busy pool to learn the database is there.
 */
export function createDatabaseProbe(connectionString: string): {
  probe(): Promise<void>;
  close(): Promise<void>;
} {
  const pool = new pg.Pool({
    connectionString,
    max: 1,
    connectionTimeoutMillis: GATE_TIMINGS.timeoutMs,
    application_name: "clupilot-web-probe",
  });
  // An idle probe connection dropped by a restart: the next probe connects anew (and reports).
  pool.on("error", () => {});
  return {
    async probe() {
      await pool.query("select 1");
    },
    close: () => pool.end(),
  };
}
