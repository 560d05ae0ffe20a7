"use server";

import { revalidatePath } from "next/cache";
import { createUserAs } from "@/lib/auth/account-operations";
import { currentActor } from "@/lib/auth/actor";
import { ZCreateUser } from "@/lib/auth/schemas";
import { getDb } from "@/lib/db/client";
import { actionFailure, inputObject, type ActionResult } from "./action-result";

export type CreateUserResult = ActionResult<{ userId: string; name: string }>;

/** Admin: adds a user with a role and an initial password (they change it on their account page). */
export async function createUserAction(
  _previous: CreateUserResult | null,
  input: FormData | Record<string, unknown>,
): Promise<CreateUserResult> {
  try {
    const actor = await currentActor("admin");
    const parsed = ZCreateUser.parse(inputObject(input));
    const user = await createUserAs(getDb(), actor, parsed);
    revalidatePath("/users");
    return { ok: true, userId: user.id, name: user.name };
  } catch (error) {
    return actionFailure(error, "create user");
  }
}
