"use server";

import { getDb } from "@/lib/db/client";
import { auditedHostCreation } from "@/lib/hosts/create-host";
import { ZCreateHost } from "@/lib/hosts/schemas";
import { formAction } from "./action";
import type { ActionResult } from "./action-result";

export type CreateHostResult = ActionResult<{ hostId: string; runId: string }>;

/**
 * Adds a host and starts its onboarding. Shaped for `useActionState` (previous state first);
 * takes the form's FormData or a plain object.
 */
export const createHostAction = formAction(
  {
    name: "create host",
    role: "operator",
    schema: ZCreateHost,
    revalidate: ["/hosts"],
    // The form's cluster fields are named `cluster.*`: their errors land under them.
    errorKeys: "path",
  },
  async ({ actor, input }) => {
    const { hostId, runId } = await auditedHostCreation(getDb(), actor, input);
    return { hostId, runId };
  },
);
