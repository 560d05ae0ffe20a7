import type pg from "pg";
import type { Reachability } from "@/lib/db/reachability";
import { isDatabaseUnreachable } from "@/lib/db/unreachable";

/**
 * Resolves once the pool's database answers. A worker started while PostgreSQL restarts (npm
 * start's supervisor brings a killed worker back at once) waits for it, the outage reported once
 * through `reachability`, instead of exiting and being restarted after ever longer backoffs.
 * Anything but "the database is away" (a wrong password, a missing database) fails at once.
 */
export async function untilDatabaseAnswers(
  pool: pg.Pool,
  reachability: Reachability,
  retryMs = 1000,
): Promise<void> {
  for (;;) {
    try {
      await pool.query("select 1");
      reachability.answered();
      return;
    } catch (error) {
      if (!isDatabaseUnreachable(error)) throw error;
      reachability.lost(error);
      await new Promise((resolve) => setTimeout(resolve, retryMs));
    }
  }
}
