"use server";

import { z } from "zod";
import { getDb } from "@/lib/db/client";
import { auditedHostDeletion } from "@/lib/hosts/delete-host";
import { ZHostId } from "@/lib/hosts/schemas";
import { action } from "./action";

/** An admin deletes a retired host with its history; the audit log keeps the record. */
export const deleteHostAction = action(
  {
    name: "delete host",
    role: "admin",
    schema: z.object({ hostId: ZHostId }),
    revalidate: [["/hosts", "layout"]],
  },
  async ({ actor, input: { hostId } }) => {
    const deleted = await auditedHostDeletion(getDb(), actor, hostId);
    return { name: deleted.name };
  },
);
