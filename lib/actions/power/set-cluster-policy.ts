"use server";

import type { z } from "zod";
import type { Actor } from "@/lib/auth/actor";
import { getDb } from "@/lib/db/client";
import { ZSetClusterPolicy } from "@/lib/power/clusters/schemas";
import { setClusterPolicy } from "@/lib/power/operations/set-cluster-policy";
import { action, formAction, type ActionSpec } from "../action";
import { powerForm } from "./config-change";

const spec: ActionSpec<"admin", typeof ZSetClusterPolicy> = {
  name: "set cluster policy",
  role: "admin",
  schema: ZSetClusterPolicy,
  // An empty first threshold is off; an empty node that stays is "the console's node".
  input: powerForm({ blank: "null" }),
  errorKeys: "path",
  revalidate: [["/power", "layout"]],
};

async function change({
  actor,
  input,
}: {
  actor: Actor;
  input: z.output<typeof ZSetClusterPolicy>;
}) {
  const { id, policy } = await setClusterPolicy(getDb(), input, actor);
  return { id, policy };
}

/**
 * How a cluster goes down on a power event. Admins only; audited. Consolidate on hyper-converged
 * Ceph is refused with the reason under the policy field.
 */
export const setClusterPolicyAction = action(spec, change);

/**
 * A consolidating cluster's settings form (mode, the node that stays, the first threshold):
 * field errors come back under `consolidate.…`. Admins only; audited.
 */
export const setClusterConsolidateAction = formAction(spec, change);
