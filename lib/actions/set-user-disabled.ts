"use server";

import { setUserDisabledAs } from "@/lib/auth/account-operations";
import { ZSetUserDisabled } from "@/lib/auth/schemas";
import { getDb } from "@/lib/db/client";
import { action } from "./action";

/**
 * Admin: disables a user (their sessions end, their API tokens stop working) or enables them
 * again. Never the last enabled admin, never oneself.
 */
export const setUserDisabledAction = action(
  {
    name: "disable or enable user",
    role: "admin",
    schema: ZSetUserDisabled,
    revalidate: ["/users"],
  },
  async ({ actor, input }) => {
    await setUserDisabledAs(getDb(), actor, input);
    return { userId: input.userId };
  },
);
