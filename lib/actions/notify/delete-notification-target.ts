"use server";

import { getDb } from "@/lib/db/client";
import { ZNotificationTargetRef } from "@/lib/notify/schemas";
import { deleteTarget } from "@/lib/notify/targets";
import { action } from "../action";

/** Removes a notification target and its deliveries. Admins. */
export const deleteNotificationTargetAction = action(
  {
    name: "delete notification target",
    role: "admin",
    schema: ZNotificationTargetRef,
    errorKeys: "path",
    revalidate: ["/power/notifications"],
  },
  async ({ actor, input }) => {
    await deleteTarget(getDb(), input, actor);
    return {};
  },
);
