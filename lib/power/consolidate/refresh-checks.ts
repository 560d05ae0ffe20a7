import type { Database } from "@/lib/db/client";
import { safeErrorSummary } from "@/lib/errors";
import { loadClusterGroups } from "@/lib/power/clusters/load-cluster-groups";
import { readPowerSettings } from "@/lib/power/config/power-settings-store";
import { loadTargets, type PveEndpoint } from "@/lib/power/targets/load-targets";
import type { ConsolidateCheck } from "../clusters/consolidation-check";
import { saveConsolidateCheck } from "./save-check";
import { checkConsolidation } from "./read-facts";
import { consolidationOf } from "../clusters/remaining-node";

/**
 * Checks every consolidating cluster (or the given ones) again and keeps the answer for the
 * cluster card and the plan preview: after each cluster refresh (every few minutes, and when an
 * admin changes a cluster's policy or its consolidate settings). Never during an outage: a
 * first stage checks for itself, live. Returns the checks by cluster id.
 */
export async function refreshConsolidateChecks(
  db: Database,
  options: {
    clusterIds?: readonly string[];
    timeoutMs?: number;
    log?: (line: string) => void;
  } = {},
): Promise<Map<string, ConsolidateCheck>> {
  const groups = (await loadClusterGroups(db)).filter(
    (g) => g.policy === "consolidate" && (!options.clusterIds || options.clusterIds.includes(g.id)),
  );
  const checks = new Map<string, ConsolidateCheck>();
  if (groups.length === 0) return checks;
  const [records, settings] = await Promise.all([loadTargets(db), readPowerSettings(db)]);
  for (const group of groups) {
    const endpoints = new Map<string, PveEndpoint>();
    for (const node of group.nodes) {
      const endpoint = records.find((r) => r.id === node.targetId)?.endpoint;
      if (endpoint?.kind === "pve-node") endpoints.set(node.name, endpoint);
    }
    try {
      const check = await checkConsolidation(
        db,
        group,
        consolidationOf(group, records, settings.shutdown.consoleGuest),
        { endpoints, timeoutMs: options.timeoutMs ?? settings.shutdown.callTimeoutSeconds * 1000 },
      );
      await saveConsolidateCheck(db, group.id, check);
      checks.set(group.id, check);
    } catch (error) {
      options.log?.(`consolidate check of ${group.name}: ${safeErrorSummary(error)}`);
    }
  }
  return checks;
}
