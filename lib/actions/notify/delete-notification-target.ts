"use server";

import { revalidatePath } from "next/cache";
import { currentActor } from "@/lib/auth/actor";
import { parseInput } from "@/lib/api/parse-input";
import { getDb } from "@/lib/db/client";
import { ZNotificationTargetRef } from "@/lib/notify/schemas";
import { deleteTarget } from "@/lib/notify/targets";
import { actionFailure, type ActionResult } from "../action-result";

/** Removes a notification target and its deliveries. Admins. */
export async function deleteNotificationTargetAction(
  input: Record<string, unknown>,
): Promise<ActionResult> {
  try {
    const actor = await currentActor("admin");
    await deleteTarget(getDb(), parseInput(ZNotificationTargetRef, input), actor);
    revalidatePath("/power/notifications");
    return { ok: true };
  } catch (error) {
    return actionFailure(error, "delete notification target");
  }
}
