"use server";

import { revalidatePath } from "next/cache";
import { parseInput } from "@/lib/api/parse-input";
import { currentActor } from "@/lib/auth/actor";
import { getDb } from "@/lib/db/client";
import { ZStartDrill } from "@/lib/power/drill/schemas";
import { startDrill, type DrillStarted } from "@/lib/power/drill/start-drill";
import { actionFailure, type ActionResult } from "../action-result";
import { powerFormInput } from "./power-form-input";

/**
 * Starts a drill of one UPS's outage: in dry-run (nothing sent), or live with the targets its
 * confirmation listed. Admins only; audited. Answers the run to follow on its timeline.
 */
export async function startDrillAction(
  input: FormData | Record<string, unknown>,
): Promise<ActionResult<DrillStarted>> {
  try {
    const actor = await currentActor("admin");
    const data = parseInput(ZStartDrill, powerFormInput(input));
    const result = await startDrill(getDb(), data, actor);
    revalidatePath("/power", "layout");
    return { ok: true, ...result };
  } catch (error) {
    return actionFailure(error, "start drill");
  }
}
