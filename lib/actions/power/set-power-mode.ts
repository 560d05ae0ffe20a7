"use server";

import { revalidatePath } from "next/cache";
import { parseInput } from "@/lib/api/parse-input";
import { currentActor } from "@/lib/auth/actor";
import { getDb } from "@/lib/db/client";
import { ZSetPowerMode } from "@/lib/power/schemas";
import { setPowerMode } from "@/lib/power/set-power-mode";
import type { PowerMode } from "@/lib/power/settings";
import { actionFailure, type ActionResult } from "../action-result";
import { powerFormInput } from "./power-form-input";

/**
 * Arms (with the targets the confirmation listed) or disarms. Admins only; audited. A plan that
 * changed since the confirmation was shown is refused: the dialog shows the new list.
 */
export async function setPowerModeAction(
  input: FormData | Record<string, unknown>,
): Promise<ActionResult<{ mode: PowerMode; targets: string[] }>> {
  try {
    const actor = await currentActor("admin");
    const data = parseInput(ZSetPowerMode, powerFormInput(input));
    const result = await setPowerMode(getDb(), data, actor);
    revalidatePath("/", "layout");
    return { ok: true, ...result };
  } catch (error) {
    return actionFailure(error, "set power mode");
  }
}
