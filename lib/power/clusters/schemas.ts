import { z } from "zod";
import { ZThresholds } from "@/lib/power/config/settings";

/**
 * How a cluster goes down. `cluster`: as one unit when every node lost power, only the nodes
 * that did otherwise (the rest keeps running with HA armed); `whole-cluster`: always as one
 * unit, even when only some nodes lost power; `per-host`: each node on its own; `consolidate`:
 * onto one node at a first threshold, the rest at the trigger.
 */
export const CLUSTER_POLICIES = ["cluster", "whole-cluster", "per-host", "consolidate"] as const;

export const ZClusterPolicy = z.enum(CLUSTER_POLICIES, {
  error: "Choose cluster (only what lost power), whole cluster always, per host, or consolidate.",
});

/** What consolidating does with the guests of the nodes that go down at the first threshold. */
export const CONSOLIDATE_MODES = ["migrate", "stop"] as const;
export type ConsolidateMode = (typeof CONSOLIDATE_MODES)[number];

const NODE_NAME = /^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?$/;

/**
 * A consolidating cluster's own settings (docs/power-cluster-sequence.md, "Consolidate"): at the
 * first threshold the guests of every node but one are migrated (or stopped) and those nodes go
 * down; the remaining node runs until the ordinary trigger. The first threshold has the trigger
 * rows that measure the battery (runtime, charge, time on battery): the first that fires starts
 * stage one. `remainingNode` names the node that stays; where the console runs on a node of the
 * cluster, that node stays whatever is set (a different name here fails the check).
 */
export const ZConsolidateSettings = z.object({
  mode: z.enum(CONSOLIDATE_MODES, { error: "Choose migrate or stop." }),
  remainingNode: z.string().regex(NODE_NAME, "a Proxmox node name").nullable(),
  firstThreshold: ZThresholds.refine(
    (t) =>
      t.runtimeBelowSeconds !== null ||
      t.chargeBelowPercent !== null ||
      t.onBatteryForSeconds !== null,
    { message: "Set at least one first threshold: runtime, charge or time on battery." },
  ),
});
export type ConsolidateSettings = z.infer<typeof ZConsolidateSettings>;

/**
 * Until an admin sets them: migrate, the console's node (or none: the check then asks for one),
 * and a first stage well before the trigger defaults (runtime 5 min, charge 30 %, 10 min on
 * battery).
 */
export const DEFAULT_CONSOLIDATE_SETTINGS: ConsolidateSettings = {
  mode: "migrate",
  remainingNode: null,
  firstThreshold: { runtimeBelowSeconds: 900, chargeBelowPercent: 60, onBatteryForSeconds: 300 },
};

/** A change of a cluster's consolidate settings; a key left out keeps its value. */
export const ZConsolidateSettingsChange = z
  .object({
    mode: ZConsolidateSettings.shape.mode,
    remainingNode: ZConsolidateSettings.shape.remainingNode,
    firstThreshold: ZThresholds.partial(),
  })
  .partial()
  .strict();

export const ZSetClusterPolicy = z.object({
  id: z.uuid({ error: "Not a cluster id; reload the page." }),
  policy: ZClusterPolicy,
  consolidate: ZConsolidateSettingsChange.optional(),
});

/** Why consolidating is never offered on hyper-converged Ceph (the field error and the page). */
export const CONSOLIDATE_ON_CEPH =
  "Not offered on hyper-converged Ceph: shutting nodes down early takes their OSDs and monitors with them, so the pools drop below min_size and the guests left running freeze on I/O. Choose cluster or whole cluster.";

/** A refresh takes nothing: any field is a mistake, refused rather than ignored. */
export const ZRefreshClusters = z.strictObject(
  {},
  { error: "A refresh takes no fields; send {}." },
);
