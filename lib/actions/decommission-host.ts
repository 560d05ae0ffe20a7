"use server";

import { revalidatePath } from "next/cache";
import { z } from "zod";
import { currentActor } from "@/lib/auth/actor";
import { getDb } from "@/lib/db/client";
import { auditedHostDecommission } from "@/lib/hosts/decommission-host";
import { ZHostId } from "@/lib/hosts/schemas";
import { actionFailure, inputObject, type ActionResult } from "./action-result";

const ZDecommissionHost = z.object({ hostId: ZHostId });

/** Starts the decommission pipeline; its results show live on the host page. */
export async function decommissionHostAction(
  input: FormData | { hostId: string },
): Promise<ActionResult<{ runId: string; abortsRunId: string | null }>> {
  try {
    const actor = await currentActor("operator");
    const { hostId } = ZDecommissionHost.parse(inputObject(input));
    const started = await auditedHostDecommission(getDb(), actor, hostId);
    revalidatePath("/hosts", "layout");
    return { ok: true, ...started };
  } catch (error) {
    return actionFailure(error, "decommission host");
  }
}
