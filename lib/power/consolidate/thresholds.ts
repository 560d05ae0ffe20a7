import { inArray } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { powerTargetFeeds } from "@/lib/db/schema";
import { loadClusterGroups } from "@/lib/power/clusters/load-cluster-groups";
import type { StageThreshold } from "@/lib/power/triggers/decide";

/**
 * By UPS id: the first thresholds of the consolidating clusters it feeds (a node of the cluster
 * is a target fed by it). What each UPS's monitor decides the first stages on.
 */
export async function stageThresholdsByUps(
  db: Pick<Database, "select">,
): Promise<Map<string, StageThreshold[]>> {
  const groups = (await loadClusterGroups(db)).filter(
    (g) => g.policy === "consolidate" && !g.hyperConverged,
  );
  const byUps = new Map<string, StageThreshold[]>();
  const targetIds = groups.flatMap((g) => g.nodes.flatMap((n) => (n.targetId ? [n.targetId] : [])));
  if (targetIds.length === 0) return byUps;
  const feeds = await db
    .select({ targetId: powerTargetFeeds.targetId, upsId: powerTargetFeeds.upsId })
    .from(powerTargetFeeds)
    .where(inArray(powerTargetFeeds.targetId, targetIds));
  for (const group of groups) {
    const members = new Set(group.nodes.map((n) => n.targetId));
    const upsIds = new Set(feeds.filter((f) => members.has(f.targetId)).map((f) => f.upsId));
    for (const upsId of upsIds) {
      byUps.set(upsId, [
        ...(byUps.get(upsId) ?? []),
        { clusterId: group.id, name: group.name, firstThreshold: group.consolidate.firstThreshold },
      ]);
    }
  }
  return byUps;
}
