"use server";

import { z } from "zod";
import { currentActor } from "@/lib/auth/actor";
import { getDb } from "@/lib/db/client";
import { testHostConnection, ZEditHost } from "@/lib/hosts/edit-host";
import { ZHostId } from "@/lib/hosts/schemas";
import type { ConnectionTestResult } from "@/lib/hosts/test-connection";
import { actionFailure, inputObject, type ActionResult } from "./action-result";

export type TestConnectionActionResult = ActionResult<{ test: ConnectionTestResult }>;

/**
 * "Test connection" on the edit form: logs in with the form's settings against the host's
 * pin and saves nothing. An operator's action: it uses the stored credential.
 */
export async function testConnectionAction(
  input: FormData | Record<string, unknown>,
): Promise<TestConnectionActionResult> {
  try {
    await currentActor("operator");
    const object = inputObject(input);
    const { hostId } = z.object({ hostId: ZHostId }).parse(object);
    const edit = ZEditHost.parse(object);
    const test = await testHostConnection(getDb(), { hostId, edit });
    return { ok: true, test };
  } catch (error) {
    return actionFailure(error, "test connection");
  }
}
