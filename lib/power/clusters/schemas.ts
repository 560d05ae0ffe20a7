import { z } from "zod";

export const CLUSTER_POLICIES = ["cluster", "per-host", "consolidate"] as const;

export const ZClusterPolicy = z.enum(CLUSTER_POLICIES, {
  error: "Choose cluster as one unit, per host, or consolidate.",
});

export const ZSetClusterPolicy = z.object({
  id: z.uuid({ error: "Not a cluster id; reload the page." }),
  policy: ZClusterPolicy,
});

/** Why consolidating is never offered on hyper-converged Ceph (the field error and the page). */
export const CONSOLIDATE_ON_CEPH =
  "Not offered on hyper-converged Ceph: shutting nodes down early takes their OSDs and monitors with them, so the pools drop below min_size and the guests left running freeze on I/O. Choose cluster as one unit.";

/** A refresh takes nothing: any field is a mistake, refused rather than ignored. */
export const ZRefreshClusters = z.strictObject(
  {},
  { error: "A refresh takes no fields; send {}." },
);
