"use server";

import { revalidatePath } from "next/cache";
import { signOutOtherSessionsAs } from "@/lib/auth/account-operations";
import { currentActor } from "@/lib/auth/actor";
import { sessionCookieToken } from "@/lib/auth/request-context";
import { getDb } from "@/lib/db/client";
import { AppError } from "@/lib/errors";
import { actionFailure, type ActionResult } from "./action-result";

/** Signs the user out of every other browser (a lost laptop); this one stays signed in. */
export async function signOutOtherSessionsAction(): Promise<ActionResult<{ ended: number }>> {
  try {
    const actor = await currentActor("viewer");
    const token = await sessionCookieToken();
    if (!actor.userId || !token) {
      throw new AppError("unauthenticated", "Only a signed-in browser can end its other sessions.");
    }
    const ended = await signOutOtherSessionsAs(getDb(), { ...actor, userId: actor.userId }, token);
    revalidatePath("/account");
    return { ok: true, ended };
  } catch (error) {
    return actionFailure(error, "sign out other sessions");
  }
}
