"use server";

import { revalidatePath } from "next/cache";
import { z } from "zod";
import { getDb } from "@/lib/db/client";
import { auditedHostReonboard } from "@/lib/hosts/reonboard-host";
import { ZHostId } from "@/lib/hosts/schemas";
import { currentActor } from "@/lib/auth/actor";
import { actionFailure, inputObject, type ActionResult } from "./action-result";

const ZReonboardHost = z.object({ hostId: ZHostId });

/** Starts a new onboarding run for a host whose latest run has ended (active or failed). */
export async function reonboardHostAction(
  input: FormData | { hostId: string },
): Promise<ActionResult<{ runId: string }>> {
  try {
    const actor = await currentActor("operator");
    const { hostId } = ZReonboardHost.parse(inputObject(input));
    const { runId } = await auditedHostReonboard(getDb(), actor, hostId);
    revalidatePath("/hosts", "layout");
    return { ok: true, runId };
  } catch (error) {
    return actionFailure(error, "re-onboard host");
  }
}
