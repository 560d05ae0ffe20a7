import { eq } from "drizzle-orm";
import type { z } from "zod";
import { audited, type AuditActor } from "@/lib/audit/record-audit";
import type { Database } from "@/lib/db/client";
import { upsDevices, upsMonitorState } from "@/lib/db/schema";
import { AppError } from "@/lib/errors";
import { recordPowerEvents } from "./events";
import { ZReleaseLatch } from "./schemas";

/**
 * An admin releases a UPS's latch by hand (power is back and they do not want to wait for the
 * stable-mains period). The monitor adopts the release with its next reading; if the UPS is
 * still failing, its triggers can fire again. The first-stage latches of consolidating clusters
 * go with it.
 */
export async function releaseLatch(
  db: Database,
  input: z.input<typeof ZReleaseLatch>,
  actor: AuditActor,
): Promise<void> {
  const { upsId } = ZReleaseLatch.parse(input);
  await audited(db, { actor, action: "power.latch_release", target: `ups:${upsId}` }, () =>
    db.transaction(async (tx) => {
      const [row] = await tx
        .select({
          name: upsDevices.name,
          latchedAt: upsMonitorState.latchedAt,
          reason: upsMonitorState.latchedReason,
          stages: upsMonitorState.consolidateLatches,
        })
        .from(upsDevices)
        .leftJoin(upsMonitorState, eq(upsMonitorState.upsId, upsDevices.id))
        .where(eq(upsDevices.id, upsId))
        .for("update", { of: upsDevices });
      if (!row) throw new AppError("not_found", "That UPS does not exist (any more).");
      const stages = Object.keys(row.stages ?? {}).length;
      if (!row.latchedAt && stages === 0)
        throw new AppError("conflict", `UPS ${row.name} has no latched trigger to release.`);
      await tx
        .update(upsMonitorState)
        .set({
          latchedTrigger: null,
          latchedAt: null,
          latchedReason: null,
          latchedReading: null,
          consolidateLatches: {},
        })
        .where(eq(upsMonitorState.upsId, upsId));
      const what = row.latchedAt
        ? `latch released by ${actor.name} (it fired ${row.latchedAt.toISOString()}: ${row.reason ?? ""})`
        : `released by ${actor.name}`;
      await recordPowerEvents(tx, [
        {
          severity: "warning",
          kind: "latch.released",
          message: `${row.name}: ${what}${stages > 0 ? `; with it the first-stage latch of ${stages} consolidating cluster(s)` : ""}`,
          upsId,
        },
      ]);
    }),
  );
}
