"use server";

import { revalidatePath } from "next/cache";
import { z } from "zod";
import { getDb } from "@/lib/db/client";
import { reonboardHost } from "@/lib/hosts/reonboard-host";
import { ZHostId } from "@/lib/hosts/schemas";
import { currentActor } from "@/lib/auth/actor";
import { audited } from "@/lib/audit/record-audit";
import { actionFailure, inputObject, type ActionResult } from "./action-result";

const ZReonboardHost = z.object({ hostId: ZHostId });

/** Starts a new onboarding run for a host whose latest run has ended (active or failed). */
export async function reonboardHostAction(
  input: FormData | { hostId: string },
): Promise<ActionResult<{ runId: string }>> {
  try {
    const actor = await currentActor("operator");
    const { hostId } = ZReonboardHost.parse(inputObject(input));
    const db = getDb();
    const { runId } = await audited(
      db,
      { actor, action: "host.reonboard", target: `host:${hostId}` },
      () => reonboardHost(db, { hostId, actor: actor.name }),
    );
    revalidatePath("/hosts", "layout");
    return { ok: true, runId };
  } catch (error) {
    return actionFailure(error, "re-onboard host");
  }
}
