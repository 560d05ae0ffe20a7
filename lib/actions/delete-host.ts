"use server";

import { revalidatePath } from "next/cache";
import { z } from "zod";
import { currentActor } from "@/lib/auth/actor";
import { getDb } from "@/lib/db/client";
import { auditedHostDeletion } from "@/lib/hosts/delete-host";
import { ZHostId } from "@/lib/hosts/schemas";
import { actionFailure, inputObject, type ActionResult } from "./action-result";

const ZDeleteHost = z.object({ hostId: ZHostId });

/** An admin deletes a retired host with its history; the audit log keeps the record. */
export async function deleteHostAction(
  input: FormData | { hostId: string },
): Promise<ActionResult<{ name: string }>> {
  try {
    const actor = await currentActor("admin");
    const { hostId } = ZDeleteHost.parse(inputObject(input));
    const deleted = await auditedHostDeletion(getDb(), actor, hostId);
    revalidatePath("/hosts", "layout");
    return { ok: true, name: deleted.name };
  } catch (error) {
    return actionFailure(error, "delete host");
  }
}
