"use server";

import { getDb } from "@/lib/db/client";
import { bringBackNow, ZBringBackNow } from "@/lib/power/operations/bring-back-now";
import { action } from "../action";
import { powerFormInput } from "./power-form-input";

/**
 * "Bring back now": starts a power-back run for the open outage without waiting for the policy.
 * Admins only; audited. Answers the run to follow.
 */
export const bringBackNowAction = action(
  {
    name: "bring back now",
    role: "admin",
    schema: ZBringBackNow,
    input: powerFormInput,
    errorKeys: "path",
    revalidate: [["/power", "layout"]],
  },
  async ({ actor, input }) => ({ runId: (await bringBackNow(getDb(), input, actor)).runId }),
);
