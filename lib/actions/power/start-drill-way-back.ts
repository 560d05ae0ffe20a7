"use server";

import { getDb } from "@/lib/db/client";
import { startDrillWayBack } from "@/lib/power/drill/drill-way-back";
import { ZStartDrillWayBack } from "@/lib/power/drill/schemas";
import { action } from "../action";
import { powerFormInput } from "./power-form-input";

/**
 * Starts a drill's way back: in dry-run (nothing sent), or live with the hosts its confirmation
 * listed. Admins only; audited. Answers the run to follow on its timeline.
 */
export const startDrillWayBackAction = action(
  {
    name: "start drill way back",
    role: "admin",
    schema: ZStartDrillWayBack,
    input: powerFormInput,
    errorKeys: "path",
    revalidate: [["/power", "layout"]],
  },
  async ({ actor, input }) => startDrillWayBack(getDb(), input, actor),
);
