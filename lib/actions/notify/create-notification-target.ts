"use server";

import { revalidatePath } from "next/cache";
import { currentActor } from "@/lib/auth/actor";
import { parseInput } from "@/lib/api/parse-input";
import { getDb } from "@/lib/db/client";
import { ZCreateNotificationTarget } from "@/lib/notify/schemas";
import { createTarget, type NotificationTargetView } from "@/lib/notify/targets";
import { actionFailure, type ActionResult } from "../action-result";
import { notifyFormInput } from "./form-input";

/** Adds a notification target; its URL and auth header are sealed, never shown again. Admins. */
export async function createNotificationTargetAction(
  _previous: ActionResult<{ target: NotificationTargetView }> | null,
  input: FormData | Record<string, unknown>,
): Promise<ActionResult<{ target: NotificationTargetView }>> {
  try {
    const actor = await currentActor("admin");
    const target = await createTarget(
      getDb(),
      parseInput(ZCreateNotificationTarget, notifyFormInput(input)),
      actor,
    );
    revalidatePath("/power/notifications");
    return { ok: true, target };
  } catch (error) {
    return actionFailure(error, "create notification target");
  }
}
