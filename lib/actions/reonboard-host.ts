"use server";

import { z } from "zod";
import { getDb } from "@/lib/db/client";
import { auditedHostReonboard } from "@/lib/hosts/reonboard-host";
import { ZHostId } from "@/lib/hosts/schemas";
import { action } from "./action";

/** Starts a new onboarding run for a host whose latest run has ended (active or failed). */
export const reonboardHostAction = action(
  {
    name: "re-onboard host",
    role: "operator",
    schema: z.object({ hostId: ZHostId }),
    revalidate: [["/hosts", "layout"]],
  },
  async ({ actor, input: { hostId } }) => {
    const { runId } = await auditedHostReonboard(getDb(), actor, hostId);
    return { runId };
  },
);
