"use server";

import { changeUserRoleAs } from "@/lib/auth/account-operations";
import { ZChangeRole } from "@/lib/auth/schemas";
import { getDb } from "@/lib/db/client";
import { action } from "./action";

/** Admin: gives a user another role (refused for the last enabled admin). */
export const changeUserRoleAction = action(
  { name: "change user role", role: "admin", schema: ZChangeRole, revalidate: ["/users"] },
  async ({ actor, input }) => {
    await changeUserRoleAs(getDb(), actor, input);
    return { userId: input.userId };
  },
);
