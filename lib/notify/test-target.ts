import type { z } from "zod";
import { audited, type AuditActor } from "@/lib/audit/record-audit";
import type { Database } from "@/lib/db/client";
import { sendToTarget } from "./deliver";
import { testMessage } from "./message";
import { ZNotificationTargetRef } from "./schemas";
import type { SendOutcome } from "./send";
import { getTargetRow } from "./targets";

/**
 * The Test button: a real message to the target, now, in its format with its URL and auth
 * header, answered with what the other side said. Not a delivery (no event, no retry).
 */
export async function testTarget(
  db: Database,
  input: z.input<typeof ZNotificationTargetRef>,
  actor: AuditActor,
  timeoutMs?: number,
): Promise<SendOutcome> {
  const { id } = ZNotificationTargetRef.parse(input);
  return audited(
    db,
    {
      actor,
      action: "notify.target_test",
      target: `notify:${id}`,
      detail: (outcome) => (outcome.ok ? { status: outcome.status } : { error: outcome.error }),
    },
    async () => {
      const target = await getTargetRow(db, id);
      return sendToTarget(target, testMessage(target.name, new Date()), timeoutMs);
    },
  );
}
