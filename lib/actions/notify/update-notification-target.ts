"use server";

import { revalidatePath } from "next/cache";
import { currentActor } from "@/lib/auth/actor";
import { parseInput } from "@/lib/api/parse-input";
import { getDb } from "@/lib/db/client";
import { ZUpdateNotificationTarget } from "@/lib/notify/schemas";
import { updateTarget, type NotificationTargetView } from "@/lib/notify/targets";
import { actionFailure, type ActionResult } from "../action-result";
import { notifyFormInput } from "./form-input";

/** Changes a notification target; an empty URL or header value keeps the stored one. Admins. */
export async function updateNotificationTargetAction(
  _previous: ActionResult<{ target: NotificationTargetView }> | null,
  input: FormData | Record<string, unknown>,
): Promise<ActionResult<{ target: NotificationTargetView }>> {
  try {
    const actor = await currentActor("admin");
    const target = await updateTarget(
      getDb(),
      parseInput(ZUpdateNotificationTarget, notifyFormInput(input)),
      actor,
    );
    revalidatePath("/power/notifications");
    return { ok: true, target };
  } catch (error) {
    return actionFailure(error, "update notification target");
  }
}
