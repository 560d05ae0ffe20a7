"use server";

import { z } from "zod";
import { getDb } from "@/lib/db/client";
import { ZRunId } from "@/lib/hosts/schemas";
import { auditedRunRetry } from "@/lib/api/audited-run-changes";
import { action } from "./action";

/** Re-enters a failed run at the step that failed. */
export const retryRunAction = action(
  {
    name: "retry run",
    role: "operator",
    schema: z.object({ runId: ZRunId }),
    revalidate: [["/hosts", "layout"]],
  },
  async ({ actor, input: { runId } }) => {
    await auditedRunRetry(getDb(), actor, runId);
    return { runId };
  },
);
