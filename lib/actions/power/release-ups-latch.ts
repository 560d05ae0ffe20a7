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
 * period). Admins only; audited. While the UPS is still on battery the release lets its trigger
 * fire again and needs `confirmDuringOutage` (the dialog says what it does; refused otherwise).
 */
export async function releaseUpsLatchAction(
  input: FormData | Record<string, unknown>,
): Promise<ActionResult<{ upsId: string; duringOutage: boolean }>> {
  try {
    const actor = await currentActor("admin");
    const data = parseInput(ZReleaseLatch, powerFormInput(input));
    const released = await releaseLatch(getDb(), data, actor);
    revalidatePath("/power", "layout");
    return { ok: true, ...released };
  } catch (error) {
    return actionFailure(error, "release ups latch");
  }
}
