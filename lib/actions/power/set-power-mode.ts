"use server";

import { getDb } from "@/lib/db/client";
import { ZSetPowerMode } from "@/lib/power/config/schemas";
import { setPowerMode } from "@/lib/power/operations/set-power-mode";
import { action } from "../action";
import { powerFormInput } from "./power-form-input";

/**
 * Arms (with the targets the confirmation listed) or disarms. Admins only; audited. A plan that
 * changed since the confirmation was shown is refused: the dialog shows the new list.
 */
export const setPowerModeAction = action(
  {
    name: "set power mode",
    role: "admin",
    schema: ZSetPowerMode,
    input: powerFormInput,
    errorKeys: "path",
    revalidate: [["/", "layout"]],
  },
  async ({ actor, input }) => setPowerMode(getDb(), input, actor),
);
