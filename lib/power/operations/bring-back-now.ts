import { z } from "zod";
import { audited, type AuditActor } from "@/lib/audit/record-audit";
import type { Database } from "@/lib/db/client";
import { AppError } from "@/lib/errors";
import { startPowerBackRun } from "../power-back-pipeline/start-power-back";

/**
 * An admin's "Bring back now": a power-back run for the open outage without waiting for the
 * policy (mains stable, charge, runtime) — the admin has judged the power. Audited
 * (`power.power_back`); refused with why when a way back is running, no outage is open or its
 * shutdown has not ended. In dry-run the run records what it would do and sends nothing.
 */
export const ZBringBackNow = z.strictObject({}, { error: "Send {} to bring the fleet back now." });

export async function bringBackNow(
  db: Database,
  input: z.input<typeof ZBringBackNow>,
  actor: AuditActor,
): Promise<{ runId: string }> {
  ZBringBackNow.parse(input);
  return audited(
    db,
    {
      actor,
      action: "power.power_back",
      target: null,
      detail: (result: { runId: string }) => ({ runId: result.runId }),
    },
    async () => {
      const started = await db.transaction((tx) =>
        startPowerBackRun(tx, { kind: "admin", name: actor.name }),
      );
      if ("refused" in started) throw new AppError("conflict", started.refused);
      return started;
    },
  );
}
