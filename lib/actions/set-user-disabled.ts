"use server";

import { revalidatePath } from "next/cache";
import { setUserDisabledAs } from "@/lib/auth/account-operations";
import { currentActor } from "@/lib/auth/actor";
import { ZSetUserDisabled } from "@/lib/auth/schemas";
import { getDb } from "@/lib/db/client";
import { actionFailure, inputObject, type ActionResult } from "./action-result";

/**
 * Admin: disables a user (their sessions end, their API tokens stop working) or enables them
 * again. Never the last enabled admin, never oneself.
 */
export async function setUserDisabledAction(
  input: FormData | { userId: string; disabled: boolean | string },
): Promise<ActionResult<{ userId: string }>> {
  try {
    const actor = await currentActor("admin");
    const parsed = ZSetUserDisabled.parse(inputObject(input));
    await setUserDisabledAs(getDb(), actor, parsed);
    revalidatePath("/users");
    return { ok: true, userId: parsed.userId };
  } catch (error) {
    return actionFailure(error, "disable or enable user");
  }
}
