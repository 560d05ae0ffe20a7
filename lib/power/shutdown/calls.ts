import { asc, eq } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { powerShutdownCalls } from "@/lib/db/schema";

export type ShutdownCall = typeof powerShutdownCalls.$inferSelect;

/** The run's calls (claimed, sent, failed, would-send), oldest first. */
export function callsOfRun(db: Pick<Database, "select">, runId: string): Promise<ShutdownCall[]> {
  return db
    .select()
    .from(powerShutdownCalls)
    .where(eq(powerShutdownCalls.runId, runId))
    .orderBy(asc(powerShutdownCalls.id));
}
