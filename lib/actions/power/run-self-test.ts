"use server";

import { parseInput } from "@/lib/api/parse-input";
import { currentActor } from "@/lib/auth/actor";
import { getDb } from "@/lib/db/client";
import { requestSelfTest, ZRequestSelfTest } from "@/lib/power/self-test/request-self-test";
import { actionFailure, inputObject, type ActionResult } from "../action-result";

/** The dashboard's "Run self-test now" (operators and admins): queued for the worker. */
export async function runSelfTestAction(
  input: FormData | Record<string, unknown> = {},
): Promise<ActionResult<{ message: string }>> {
  try {
    const actor = await currentActor("operator");
    parseInput(ZRequestSelfTest, inputObject(input));
    return { ok: true, message: await requestSelfTest(getDb(), actor) };
  } catch (error) {
    return actionFailure(error, "run self-test");
  }
}
