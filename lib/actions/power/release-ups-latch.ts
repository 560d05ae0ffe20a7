"use server";

import { revalidatePath } from "next/cache";
import { parseInput } from "@/lib/api/parse-input";
import { currentActor } from "@/lib/auth/actor";
import { getDb } from "@/lib/db/client";
import { releaseLatch } from "@/lib/power/release-latch";
import { ZReleaseLatch } from "@/lib/power/schemas";
import { actionFailure, type ActionResult } from "../action-result";
import { powerFormInput } from "./power-form-input";

/**
 * Releases a UPS's latched trigger by hand (power is back; no waiting for the stable-mains
 * period). Admins only; audited. A UPS still failing can fire again.
 */
export async function releaseUpsLatchAction(
  input: FormData | Record<string, unknown>,
): Promise<ActionResult<{ upsId: string }>> {
  try {
    const actor = await currentActor("admin");
    const { upsId } = parseInput(ZReleaseLatch, powerFormInput(input));
    await releaseLatch(getDb(), { upsId }, actor);
    revalidatePath("/power", "layout");
    return { ok: true, upsId };
  } catch (error) {
    return actionFailure(error, "release ups latch");
  }
}
