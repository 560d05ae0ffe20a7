import { requestActor } from "@/lib/auth/actor";
import { parseInput } from "@/lib/api/parse-input";
import { readJsonObject } from "@/lib/api/read-json-object";
import { json, respondError } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { ZSetClusterPolicy } from "@/lib/power/clusters/schemas";
import { setClusterPolicy } from "@/lib/power/clusters/set-cluster-policy";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

type Context = { params: Promise<{ clusterId: string }> };

/**
 * How the cluster goes down (admins; audited): `{ policy: "cluster" | "whole-cluster" | "per-host" |
 * "consolidate", consolidate?: { mode?, remainingNode?, firstThreshold?: { runtimeBelowSeconds?,
 * chargeBelowPercent?, onBatteryForSeconds? } } }` (a key left out keeps its value).
 * Consolidate on hyper-converged Ceph is refused (400, the reason under `fieldErrors.policy`);
 * a node that stays that is no member under `fieldErrors["consolidate.remainingNode"]`.
 * → `{ cluster: { id, name, policy, consolidate } }`.
 */
export async function PATCH(request: Request, { params }: Context): Promise<Response> {
  try {
    const actor = await requestActor(request, "admin");
    const body = await readJsonObject(request);
    const input = parseInput(ZSetClusterPolicy, { ...body, id: (await params).clusterId });
    return json({ cluster: await setClusterPolicy(getDb(), input, actor) });
  } catch (error) {
    return respondError(error, "PATCH /api/power/clusters/[clusterId]");
  }
}
