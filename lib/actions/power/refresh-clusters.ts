"use server";

import { parseInput } from "@/lib/api/parse-input";
import { currentActor } from "@/lib/auth/actor";
import { getDb } from "@/lib/db/client";
import { requestClusterRefreshBy } from "@/lib/power/clusters/refresh-task";
import { ZRefreshClusters } from "@/lib/power/clusters/schemas";
import { actionFailure, type ActionResult } from "../action-result";
import { powerFormInput } from "./power-form-input";

/**
 * Queues a refresh of every host's cluster membership (operators and admins; audited). The page
 * hears of the result on the live stream.
 */
export async function refreshClustersAction(
  input: FormData | Record<string, unknown>,
): Promise<ActionResult> {
  try {
    const actor = await currentActor("operator");
    parseInput(ZRefreshClusters, powerFormInput(input));
    await requestClusterRefreshBy(getDb(), actor);
    return { ok: true };
  } catch (error) {
    return actionFailure(error, "refresh clusters");
  }
}
