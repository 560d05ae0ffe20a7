"use server";

import { createUserAs } from "@/lib/auth/account-operations";
import { ZCreateUser } from "@/lib/auth/schemas";
import { getDb } from "@/lib/db/client";
import { formAction } from "./action";
import type { ActionResult } from "./action-result";

export type CreateUserResult = ActionResult<{ userId: string; name: string }>;

/** Admin: adds a user with a role and an initial password (they change it on their account page). */
export const createUserAction = formAction(
  { name: "create user", role: "admin", schema: ZCreateUser, revalidate: ["/users"] },
  async ({ actor, input }) => {
    const user = await createUserAs(getDb(), actor, input);
    return { userId: user.id, name: user.name };
  },
);
