import { desc, eq } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { hosts, runs } from "@/lib/db/schema";
import { AppError } from "@/lib/errors";

/**
 * The checks every operation on one host starts with. Each operation words its own refusal
 * (a retired host means something different to an edit than to a decommission), so these only
 * find the facts: the host, locked, and its latest run.
 */

export type HostRow = typeof hosts.$inferSelect;
type Reader = Pick<Database, "select">;

export function hostNotFound(hostId: string): AppError {
  return new AppError("not_found", `Host ${hostId} does not exist.`);
}

/**
 * The host row, locked until the transaction ends, or 404. The lock is what keeps two requests
 * from both passing a "no running run" check and both starting one.
 */
export async function lockHost(tx: Reader, hostId: string): Promise<HostRow> {
  const [host] = await tx.select().from(hosts).where(eq(hosts.id, hostId)).for("update");
  if (!host) throw hostNotFound(hostId);
  return host;
}

/** The host's most recent run (running or ended), or undefined before its first. */
export async function latestRun(db: Reader, hostId: string) {
  const [latest] = await db
    .select({
      id: runs.id,
      status: runs.status,
      currentStep: runs.currentStep,
      pipeline: runs.pipeline,
    })
    .from(runs)
    .where(eq(runs.hostId, hostId))
    .orderBy(desc(runs.createdAt))
    .limit(1);
  return latest;
}

/** A retired host gets no new runs: its token and key are gone, and it is history now. */
export function retiredHostError(name: string): AppError {
  return new AppError(
    "conflict",
    `${name} is retired and gets no new runs. To bring the machine back, delete the retired host and add it again.`,
  );
}
