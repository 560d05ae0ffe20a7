"use server";

import { getDb } from "@/lib/db/client";
import { releaseLatch } from "@/lib/power/operations/release-latch";
import { ZReleaseLatch } from "@/lib/power/config/schemas";
import { action } from "../action";
import { powerFormInput } from "./power-form-input";

/**
 * Releases a UPS's latched trigger by hand (power is back; no waiting for the stable-mains
 * period). Admins only; audited. While the UPS is still on battery the release lets its trigger
 * fire again and needs `confirmDuringOutage` (the dialog says what it does; refused otherwise).
 */
export const releaseUpsLatchAction = action(
  {
    name: "release ups latch",
    role: "admin",
    schema: ZReleaseLatch,
    input: powerFormInput,
    errorKeys: "path",
    revalidate: [["/power", "layout"]],
  },
  async ({ actor, input }) => releaseLatch(getDb(), input, actor),
);
