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

/**
 * How a cluster goes down on a power event. Admins only; audited. Consolidate on hyper-converged
 * Ceph is refused with the reason under the policy field.
 */
export async function setClusterPolicyAction(
  input: FormData | Record<string, unknown>,
): Promise<ActionResult<{ id: string; policy: ClusterPolicy }>> {
  try {
    const actor = await currentActor("admin");
    const data = parseInput(ZSetClusterPolicy, powerFormInput(input));
    const result = await setClusterPolicy(getDb(), data, actor);
    revalidatePath("/power", "layout");
    return { ok: true, id: result.id, policy: result.policy };
  } catch (error) {
    return actionFailure(error, "set cluster policy");
  }
}
