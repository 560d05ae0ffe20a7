"use server";

import { revalidatePath } from "next/cache";
import { parseInput } from "@/lib/api/parse-input";
import { currentActor } from "@/lib/auth/actor";
import { getDb } from "@/lib/db/client";
import type { ClusterPolicy } from "@/lib/power/clusters/load-cluster-groups";
import { ZSetClusterPolicy } from "@/lib/power/clusters/schemas";
import { setClusterPolicy } from "@/lib/power/clusters/set-cluster-policy";
import { actionFailure, type ActionResult } from "../action-result";
import { powerFormInput } from "./power-form-input";

type PolicyResult = ActionResult<{ id: string; policy: ClusterPolicy }>;

async function change(input: FormData | Record<string, unknown>): Promise<PolicyResult> {
  try {
    const actor = await currentActor("admin");
    // An empty first threshold is off; an empty node that stays is "the console's node".
    const data = parseInput(ZSetClusterPolicy, powerFormInput(input, "null"));
    const result = await setClusterPolicy(getDb(), data, actor);
    revalidatePath("/power", "layout");
    return { ok: true, id: result.id, policy: result.policy };
  } catch (error) {
    return actionFailure(error, "set cluster policy");
  }
}

/**
 * How a cluster goes down on a power event. Admins only; audited. Consolidate on hyper-converged
 * Ceph is refused with the reason under the policy field.
 */
export async function setClusterPolicyAction(
  input: FormData | Record<string, unknown>,
): Promise<PolicyResult> {
  return change(input);
}

/**
 * A consolidating cluster's settings form (mode, the node that stays, the first threshold):
 * field errors come back under `consolidate.…`. Admins only; audited.
 */
export async function setClusterConsolidateAction(
  _previous: PolicyResult | null,
  input: FormData,
): Promise<PolicyResult> {
  return change(input);
}
