"use server";

import { revalidatePath } from "next/cache";
import { parseInput } from "@/lib/api/parse-input";
import { currentActor } from "@/lib/auth/actor";
import { getDb } from "@/lib/db/client";
import { acknowledgePowerEvent, type AcknowledgedEvent } from "@/lib/power/acknowledge-power-event";
import { ZAcknowledgePowerEvent } from "@/lib/power/schemas";
import { actionFailure, type ActionResult } from "../action-result";
import { powerFormInput } from "./power-form-input";

/** An operator acknowledges a power alarm: who and when stay on the event. */
export async function acknowledgePowerEventAction(
  input: FormData | Record<string, unknown>,
): Promise<ActionResult<AcknowledgedEvent>> {
  try {
    const actor = await currentActor("operator");
    const data = parseInput(ZAcknowledgePowerEvent, powerFormInput(input));
    const acknowledged = await acknowledgePowerEvent(getDb(), data, actor);
    revalidatePath("/power", "layout");
    return { ok: true, ...acknowledged };
  } catch (error) {
    return actionFailure(error, "acknowledge power event");
  }
}
