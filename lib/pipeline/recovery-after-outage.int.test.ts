import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { workerHeartbeats } from "@/lib/db/schema";
import { registerTestDatabase } from "@/test/db";
import { recoverDeadWorkers, releaseStrandedJobs, staleAfterSecondsAt } from "./recovery";

const testDatabase = registerTestDatabase();

type JobRow = {
  id: string;
  locked_by: string | null;
  last_error: string | null;
  retry_later: boolean;
};

/** A job as graphile-worker's get_job leaves it: locked by `lockedBy`, `lockedSecondsAgo` ago. */
async function lockedJob(lockedBy: string, lockedSecondsAgo: number): Promise<string> {
  const { rows } = await testDatabase.db.execute<{ id: string }>(sql`
    select id::text as id from graphile_worker.add_job('stranded-test', '{}'::json)`);
  const id = rows[0]!.id;
  await testDatabase.db.execute(sql`
    update graphile_worker._private_jobs
    set locked_by = ${lockedBy}, attempts = 1,
      locked_at = now() - make_interval(secs => ${lockedSecondsAgo})
    where id = ${id}::bigint`);
  return id;
}

async function job(id: string): Promise<JobRow | undefined> {
  const { rows } = await testDatabase.db.execute<JobRow>(sql`
    select id::text as id, locked_by, last_error, run_at > now() + interval '1 second' as retry_later
    from graphile_worker._private_jobs where id = ${id}::bigint`);
  return rows[0];
}

describe("jobs stranded by a lost database (releaseStrandedJobs)", () => {
  it("deletes a job that succeeded and hands back one that failed or never started, like graphile-worker would have", async () => {
    const succeeded = await lockedJob("pool-own", 60);
    const failed = await lockedJob("pool-own", 60);
    const neverStarted = await lockedJob("worker-own", 60);

    const report = await releaseStrandedJobs(
      testDatabase.db,
      ["pool-own", "worker-own"],
      { busy: new Set(), succeeded: new Set([succeeded]) },
      5,
    );

    expect(report).toEqual({
      completed: [succeeded],
      released: expect.arrayContaining([failed, neverStarted]) as string[],
    });
    expect(await job(succeeded)).toBeUndefined();
    for (const id of [failed, neverStarted]) {
      const row = (await job(id))!;
      expect(row.locked_by).toBeNull();
      expect(row.last_error).toContain("lost the database");
      // graphile-worker's own retry delay: e^attempts seconds from now.
      expect(row.retry_later).toBe(true);
    }
  });

  it("leaves alone the jobs its workers still run, locks taken just now, and other workers' jobs", async () => {
    const running = await lockedJob("pool-own", 60);
    const justLocked = await lockedJob("pool-own", 0);
    const elsewhere = await lockedJob("pool-elsewhere", 60);

    const report = await releaseStrandedJobs(
      testDatabase.db,
      ["pool-own"],
      { busy: new Set([running]), succeeded: new Set([running]) },
      5,
    );

    expect(report).toEqual({ completed: [], released: [] });
    expect((await job(running))!.locked_by).toBe("pool-own");
    expect((await job(justLocked))!.locked_by).toBe("pool-own");
    expect((await job(elsewhere))!.locked_by).toBe("pool-elsewhere");
  });
});

describe("the dead-worker sweep right after a database outage", () => {
  it("does not take an old heartbeat for a dead worker until the living had time to beat again", async () => {
    await testDatabase.db.insert(workerHeartbeats).values({
      workerId: "pool-on-another-machine",
      hostname: "another-machine",
      pid: 4242,
      lastSeenAt: new Date(Date.now() - 60_000), // its last beat before the outage
    });
    const held = await lockedJob("pool-on-another-machine", 60);
    const now = Date.now();

    const justBack = await recoverDeadWorkers(testDatabase.db, [], {
      staleAfterSeconds: staleAfterSecondsAt(now, now - 5_000),
    });
    expect(justBack.unlockedWorkers).not.toContain("pool-on-another-machine");
    expect((await job(held))!.locked_by).toBe("pool-on-another-machine");

    const longBack = await recoverDeadWorkers(testDatabase.db, [], {
      staleAfterSeconds: staleAfterSecondsAt(now, now - 40_000),
    });
    expect(longBack.unlockedWorkers).toContain("pool-on-another-machine");
    expect((await job(held))!.locked_by).toBeNull();
  });

  it("judges by the usual staleness when there was no outage", () => {
    expect(staleAfterSecondsAt(Date.now(), null)).toBe(30);
  });
});
