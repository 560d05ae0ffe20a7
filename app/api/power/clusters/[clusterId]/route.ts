import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { ZSetClusterPolicy } from "@/lib/power/clusters/schemas";
import { setClusterPolicy } from "@/lib/power/operations/set-cluster-policy";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * How the cluster goes down (admins; audited): `{ policy: "cluster" | "whole-cluster" | "per-host" |
 * "consolidate", consolidate?: { mode?, remainingNode?, firstThreshold?: { runtimeBelowSeconds?,
 * chargeBelowPercent?, onBatteryForSeconds? } } }` (a key left out keeps its value).
 * Consolidate on hyper-converged Ceph is refused (400, the reason under `fieldErrors.policy`);
 * a node that stays that is no member under `fieldErrors["consolidate.remainingNode"]`.
 * → `{ cluster: { id, name, policy, consolidate } }`.
 */
export const PATCH = route(
  "PATCH /api/power/clusters/[clusterId]",
  {
    role: "admin",
    summary: "Choose how a cluster goes down on a power event",
    body: { schema: ZSetClusterPolicy, fromPath: { clusterId: "id" } },
  },
  async ({ actor, body }) => json({ cluster: await setClusterPolicy(getDb(), body, actor) }),
);
