import { sql } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import type { SelfTestOccasion } from "./run-self-test";

/** The graphile-worker task that runs a self-test (worker/tasks/power-self-test.ts). */
export const SELF_TEST_TASK = "power-self-test";
/** Every hour on the worker's crontab; `?max=1`: a failed run is not retried, the next hour is. */
export const SELF_TEST_CRONTAB = `0 * * * * ${SELF_TEST_TASK} ?max=1`;

/**
 * Queues a self-test inside the caller's transaction (arming commits with its self-test, or
 * neither does). One pending self-test at a time: a request while one waits replaces it, so a
 * burst of button presses or worker starts runs it once.
 */
export async function queueSelfTest(
  tx: Pick<Database, "execute">,
  occasion: SelfTestOccasion,
  requestedBy: string | null = null,
): Promise<void> {
  await tx.execute(sql`
    select graphile_worker.add_job(
      ${SELF_TEST_TASK},
      json_build_object('occasion', ${occasion}::text, 'requestedBy', ${requestedBy}::text),
      max_attempts => 1,
      job_key => ${SELF_TEST_TASK},
      job_key_mode => 'replace'
    )`);
}
