"use server";

import { getDb } from "@/lib/db/client";
import { acknowledgePowerEvent } from "@/lib/power/operations/acknowledge-power-event";
import { ZAcknowledgePowerEvent } from "@/lib/power/config/schemas";
import { action } from "../action";
import { powerFormInput } from "./power-form-input";

/** An operator acknowledges a power alarm: who and when stay on the event. */
export const acknowledgePowerEventAction = action(
  {
    name: "acknowledge power event",
    role: "operator",
    schema: ZAcknowledgePowerEvent,
    input: powerFormInput,
    errorKeys: "path",
    revalidate: [["/power", "layout"]],
  },
  async ({ actor, input }) => acknowledgePowerEvent(getDb(), input, actor),
);
