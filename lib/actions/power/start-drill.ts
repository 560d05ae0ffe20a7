"use server";

import { getDb } from "@/lib/db/client";
import { ZStartDrill } from "@/lib/power/drill/schemas";
import { startDrill } from "@/lib/power/drill/start-drill";
import { action } from "../action";
import { powerFormInput } from "./power-form-input";

/**
 * Starts a drill of one UPS's outage: in dry-run (nothing sent), or live with the targets its
 * confirmation listed. Admins only; audited. Answers the run to follow on its timeline.
 */
export const startDrillAction = action(
  {
    name: "start drill",
    role: "admin",
    schema: ZStartDrill,
    input: powerFormInput,
    errorKeys: "path",
    revalidate: [["/power", "layout"]],
  },
  async ({ actor, input }) => startDrill(getDb(), input, actor),
);
