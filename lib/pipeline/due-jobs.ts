import { sql } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { textArray } from "@/lib/db/text-array";

/**
 * Whether graphile-worker holds a job of these tasks that is due and free to take: what a
 * worker whose slots are all taken would run next if one came free. Read the way its own job
 * fetch selects (graphile-worker 0.17.3, dist/sql/getJobs.js): available, due, and not behind a
 * locked named queue. A plain read: nothing is locked or changed.
 */
export async function dueJobsWaiting(db: Database, tasks: readonly string[]): Promise<boolean> {
  if (tasks.length === 0) return false;
  const result = await db.execute<{ waiting: boolean }>(sql`
    select exists (
      select 1 from graphile_worker._private_jobs j
      join graphile_worker._private_tasks t on t.id = j.task_id
      where j.is_available and j.run_at <= now() and t.identifier = any(${textArray(tasks)})
        and (j.job_queue_id is null or j.job_queue_id in (
          select q.id from graphile_worker._private_job_queues q where q.is_available))
    ) as waiting`);
  return result.rows[0]?.waiting === true;
}
