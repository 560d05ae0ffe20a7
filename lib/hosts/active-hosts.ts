import { inArray, sql } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { hosts } from "@/lib/db/schema";

type HostRecord = typeof hosts.$inferSelect;

/**
 * Active hosts: those whose latest run succeeded (a host's state is never stored twice). A
 * retired host is left out: its token is gone (or about to be), and nothing is sold on it.
 */
export async function activeHosts(db: Database): Promise<HostRecord[]> {
  const result = await db.execute<{ id: string }>(sql`
    select h.id from hosts h
    join lateral (
      select status from runs where runs.host_id = h.id order by runs.created_at desc limit 1
    ) r on true
    where r.status = 'succeeded' and h.retired_at is null`);
  const ids = result.rows.map((row) => row.id);
  if (ids.length === 0) return [];
  return db.select().from(hosts).where(inArray(hosts.id, ids));
}
