"use server";

import { revalidatePath } from "next/cache";
import { z } from "zod";
import { getDb } from "@/lib/db/client";
import { ZRunId } from "@/lib/hosts/schemas";
import { retryRun } from "@/lib/runs/retry-run";
import { currentActor } from "@/lib/auth/actor";
import { audited } from "@/lib/audit/record-audit";
import { actionFailure, inputObject, type ActionResult } from "./action-result";

const ZRetryRun = z.object({ runId: ZRunId });

/** Re-enters a failed run at the step that failed. */
export async function retryRunAction(
  input: FormData | { runId: string },
): Promise<ActionResult<{ runId: string }>> {
  try {
    const actor = await currentActor("operator");
    const { runId } = ZRetryRun.parse(inputObject(input));
    const db = getDb();
    await audited(db, { actor, action: "run.retry", target: `run:${runId}` }, () =>
      retryRun(db, { runId, actor: actor.name }),
    );
    revalidatePath("/hosts", "layout");
    return { ok: true, runId };
  } catch (error) {
    return actionFailure(error, "retry run");
  }
}
