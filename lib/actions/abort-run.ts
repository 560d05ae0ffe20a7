"use server";

import { revalidatePath } from "next/cache";
import { z } from "zod";
import { getDb } from "@/lib/db/client";
import { ZRunId } from "@/lib/hosts/schemas";
import { abortRun } from "@/lib/runs/abort-run";
import { currentActor } from "@/lib/auth/actor";
import { audited } from "@/lib/audit/record-audit";
import { actionFailure, inputObject, type ActionResult } from "./action-result";

const ZAbortRun = z.object({ runId: ZRunId });

/**
 * Asks a running run to stop. Returns once the request is recorded; the current step then
 * cleans up and the run ends as failed with "aborted by operator" (the live stream shows it).
 */
export async function abortRunAction(
  input: FormData | { runId: string },
): Promise<ActionResult<{ runId: string }>> {
  try {
    const actor = await currentActor("operator");
    const { runId } = ZAbortRun.parse(inputObject(input));
    const db = getDb();
    await audited(db, { actor, action: "run.abort", target: `run:${runId}` }, () =>
      abortRun(db, { runId, actor: actor.name }),
    );
    revalidatePath("/hosts", "layout");
    return { ok: true, runId };
  } catch (error) {
    return actionFailure(error, "abort run");
  }
}
