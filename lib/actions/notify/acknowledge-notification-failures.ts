"use server";

import { getDb } from "@/lib/db/client";
import { acknowledgeFailedDeliveries } from "@/lib/notify/deliveries";
import { ZAcknowledgeDeliveries } from "@/lib/notify/schemas";
import { action } from "../action";

/** Marks a target's failed deliveries as seen: off the dashboard, no more retries. Operators. */
export const acknowledgeNotificationFailuresAction = action(
  {
    name: "acknowledge notification failures",
    role: "operator",
    schema: ZAcknowledgeDeliveries,
    errorKeys: "path",
    revalidate: [["/power", "layout"]],
  },
  async ({ actor, input }) => acknowledgeFailedDeliveries(getDb(), input, actor),
);
