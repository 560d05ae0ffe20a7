"use server";

import { getDb } from "@/lib/db/client";
import { ZUpdateNotificationTarget } from "@/lib/notify/schemas";
import { updateTarget } from "@/lib/notify/targets";
import { formAction } from "../action";
import { notifyFormInput } from "./form-input";

/** Changes a notification target; an empty URL or header value keeps the stored one. Admins. */
export const updateNotificationTargetAction = formAction(
  {
    name: "update notification target",
    role: "admin",
    schema: ZUpdateNotificationTarget,
    input: notifyFormInput,
    errorKeys: "path",
    revalidate: ["/power/notifications"],
  },
  async ({ actor, input }) => ({ target: await updateTarget(getDb(), input, actor) }),
);
