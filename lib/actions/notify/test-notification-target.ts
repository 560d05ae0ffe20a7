"use server";

import { currentActor } from "@/lib/auth/actor";
import { parseInput } from "@/lib/api/parse-input";
import { getDb } from "@/lib/db/client";
import { ZNotificationTargetRef } from "@/lib/notify/schemas";
import type { SendOutcome } from "@/lib/notify/send";
import { testTarget } from "@/lib/notify/test-target";
import { actionFailure, type ActionResult } from "../action-result";

/** Sends the target a real test message and answers what came back. Admins. */
export async function testNotificationTargetAction(
  input: Record<string, unknown>,
): Promise<ActionResult<{ outcome: SendOutcome }>> {
  try {
    const actor = await currentActor("admin");
    return {
      ok: true,
      outcome: await testTarget(getDb(), parseInput(ZNotificationTargetRef, input), actor),
    };
  } catch (error) {
    return actionFailure(error, "test notification target");
  }
}
