"use server";

import { z } from "zod";
import { signOutOtherSessionsAs } from "@/lib/auth/account-operations";
import { sessionCookieToken } from "@/lib/auth/request-context";
import { getDb } from "@/lib/db/client";
import { AppError } from "@/lib/errors";
import { buttonAction } from "./action";

/** Signs the user out of every other browser (a lost laptop); this one stays signed in. */
export const signOutOtherSessionsAction = buttonAction(
  {
    name: "sign out other sessions",
    role: "viewer",
    // No options: the button only confirms.
    schema: z.object({}).strict(),
    revalidate: ["/account"],
  },
  async ({ actor }) => {
    const token = await sessionCookieToken();
    if (!actor.userId || !token) {
      throw new AppError("unauthenticated", "Only a signed-in browser can end its other sessions.");
    }
    return {
      ended: await signOutOtherSessionsAs(getDb(), { ...actor, userId: actor.userId }, token),
    };
  },
);
