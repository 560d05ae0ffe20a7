"use server";

import { z } from "zod";
import { getDb } from "@/lib/db/client";
import { ZRunId } from "@/lib/hosts/schemas";
import { auditedRunAbort } from "@/lib/api/audited-run-changes";
import { action } from "./action";

/**
 * Asks a running run to stop. Returns once the request is recorded; the current step then
 * cleans up and the run ends as failed with "aborted by operator" (the live stream shows it).
 */
export const abortRunAction = action(
  {
    name: "abort run",
    role: "operator",
    schema: z.object({ runId: ZRunId }),
    revalidate: [["/hosts", "layout"]],
  },
  async ({ actor, input: { runId } }) => {
    await auditedRunAbort(getDb(), actor, runId);
    return { runId };
  },
);
