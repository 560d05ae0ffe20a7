import { eq } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { powerClusters } from "@/lib/db/schema";
import { notifyLive } from "@/lib/live/notify";
import type { ConsolidateCheck } from "../clusters/consolidation-check";

/** Keeps the check where the cluster card and the plan preview show it. */
export async function saveConsolidateCheck(
  db: Pick<Database, "update" | "execute">,
  clusterId: string,
  check: ConsolidateCheck,
): Promise<void> {
  await db
    .update(powerClusters)
    .set({ consolidateCheck: check })
    .where(eq(powerClusters.id, clusterId));
  await notifyLive(db, { type: "power", upsId: null, eventId: null });
}
