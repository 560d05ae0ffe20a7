"use server";

import { getDb } from "@/lib/db/client";
import { ZCreateNotificationTarget } from "@/lib/notify/schemas";
import { createTarget } from "@/lib/notify/targets";
import { formAction } from "../action";
import { notifyFormInput } from "./form-input";

/** Adds a notification target; its URL and auth header are sealed, never shown again. Admins. */
export const createNotificationTargetAction = formAction(
  {
    name: "create notification target",
    role: "admin",
    schema: ZCreateNotificationTarget,
    input: notifyFormInput,
    errorKeys: "path",
    revalidate: ["/power/notifications"],
  },
  async ({ actor, input }) => ({ target: await createTarget(getDb(), input, actor) }),
);
