"use server";

import { z } from "zod";
import { getDb } from "@/lib/db/client";
import { auditedHostDecommission } from "@/lib/hosts/decommission-host";
import { ZHostId } from "@/lib/hosts/schemas";
import { action } from "./action";

/** Starts the decommission pipeline; its results show live on the host page. */
export const decommissionHostAction = action(
  {
    name: "decommission host",
    role: "operator",
    schema: z.object({ hostId: ZHostId }),
    revalidate: [["/hosts", "layout"]],
  },
  async ({ actor, input: { hostId } }) => auditedHostDecommission(getDb(), actor, hostId),
);
