"use server";

import { z } from "zod";
import { getDb } from "@/lib/db/client";
import { testHostConnection, ZEditHost } from "@/lib/hosts/edit-host";
import { ZHostId } from "@/lib/hosts/schemas";
import type { ConnectionTestResult } from "@/lib/hosts/test-connection";
import { action } from "./action";
import type { ActionResult } from "./action-result";

export type TestConnectionActionResult = ActionResult<{ test: ConnectionTestResult }>;

/**
 * "Test connection" on the edit form: logs in with the form's settings against the host's
 * pin and saves nothing. An operator's action: it uses the stored credential.
 */
export const testConnectionAction = action(
  {
    name: "test connection",
    role: "operator",
    schema: z.object({ hostId: ZHostId }).and(ZEditHost),
  },
  async ({ input: { hostId, ...edit } }) => ({
    test: await testHostConnection(getDb(), { hostId, edit }),
  }),
);
