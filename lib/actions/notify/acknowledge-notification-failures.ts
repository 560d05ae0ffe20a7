"use server";

import { revalidatePath } from "next/cache";
import { currentActor } from "@/lib/auth/actor";
import { parseInput } from "@/lib/api/parse-input";
import { getDb } from "@/lib/db/client";
import { ZAcknowledgeDeliveries } from "@/lib/notify/schemas";
import { acknowledgeFailedDeliveries } from "@/lib/notify/deliveries";
import { actionFailure, type ActionResult } from "../action-result";

/** Marks a target's failed deliveries as seen: off the dashboard, no more retries. Operators. */
export async function acknowledgeNotificationFailuresAction(
  input: Record<string, unknown>,
): Promise<ActionResult<{ acknowledged: number }>> {
  try {
    const actor = await currentActor("operator");
    const result = await acknowledgeFailedDeliveries(
      getDb(),
      parseInput(ZAcknowledgeDeliveries, input),
      actor,
    );
    revalidatePath("/power", "layout");
    return { ok: true, ...result };
  } catch (error) {
    return actionFailure(error, "acknowledge notification failures");
  }
}
