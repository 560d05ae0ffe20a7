"use server";

import { z } from "zod";
import { getDb } from "@/lib/db/client";
import { auditedHostPinClearing, ZClearHostPin } from "@/lib/hosts/clear-host-pin";
import { ZHostId } from "@/lib/hosts/schemas";
import { action } from "./action";

/**
 * Clears the host key pin the operator confirmed (its fingerprint comes with the request).
 * An operator's action, like a re-onboard after a reinstall: it is the routine next step then,
 * it only lets the next connection trust a key, and that connection still needs a valid
 * credential. It is audited on its own with the cleared fingerprint.
 */
export const clearHostPinAction = action(
  {
    name: "clear host key pin",
    role: "operator",
    schema: z.object({ hostId: ZHostId }).and(ZClearHostPin),
    revalidate: [["/hosts", "layout"]],
  },
  async ({ actor, input: { hostId, fingerprint } }) => {
    const { cleared } = await auditedHostPinClearing(getDb(), actor, { hostId, fingerprint });
    return { cleared };
  },
);
