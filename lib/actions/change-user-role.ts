"use server";

import { revalidatePath } from "next/cache";
import { changeUserRoleAs } from "@/lib/auth/account-operations";
import { currentActor } from "@/lib/auth/actor";
import { ZChangeRole } from "@/lib/auth/schemas";
import { getDb } from "@/lib/db/client";
import { actionFailure, inputObject, type ActionResult } from "./action-result";

/** Admin: gives a user another role (refused for the last enabled admin). */
export async function changeUserRoleAction(
  input: FormData | { userId: string; role: string },
): Promise<ActionResult<{ userId: string }>> {
  try {
    const actor = await currentActor("admin");
    const parsed = ZChangeRole.parse(inputObject(input));
    await changeUserRoleAs(getDb(), actor, parsed);
    revalidatePath("/users");
    return { ok: true, userId: parsed.userId };
  } catch (error) {
    return actionFailure(error, "change user role");
  }
}
