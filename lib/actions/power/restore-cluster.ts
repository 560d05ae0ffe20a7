"use server";

import { revalidatePath } from "next/cache";
import { parseInput } from "@/lib/api/parse-input";
import { currentActor } from "@/lib/auth/actor";
import { getDb } from "@/lib/db/client";
import { restoreCluster, ZRestoreCluster, type RestoreReport } from "@/lib/power/restore-cluster";
import { actionFailure, type ActionResult } from "../action-result";
import { powerFormInput } from "./power-form-input";

/**
 * After power is back: re-arms the cluster's HA and clears its Ceph flags, each read back.
 * Admins only; audited. Answers what was restored and what could not be.
 */
export async function restoreClusterAction(
  input: FormData | Record<string, unknown>,
): Promise<ActionResult<{ report: RestoreReport }>> {
  try {
    const actor = await currentActor("admin");
    const data = parseInput(ZRestoreCluster, powerFormInput(input));
    const report = await restoreCluster(getDb(), data, actor);
    revalidatePath("/power", "layout");
    return { ok: true, report };
  } catch (error) {
    return actionFailure(error, "restore cluster");
  }
}
