import { eq } from "drizzle-orm";
import type { z } from "zod";
import { audited, type AuditActor } from "@/lib/audit/record-audit";
import type { Database } from "@/lib/db/client";
import { upsDevices, upsMonitorState } from "@/lib/db/schema";
import { AppError } from "@/lib/errors";
import { recordPowerEvents } from "../records/power-events";
import {
  outageReadingWords,
  releaseDuringOutageWarning,
  releaseIsDuringOutage,
} from "./latch-release-warning";
import { planPreview } from "../shutdown-pipeline/plan-preview";
import { ZReleaseLatch } from "../config/schemas";

export type LatchReleased = {
  upsId: string;
  /** The UPS was (last seen) on battery: its trigger may fire again with the next reading. */
  duringOutage: boolean;
};

/**
 * An admin releases a UPS's latch by hand (power is back and they do not want to wait for the
 * stable-mains period). The monitor adopts the release with its next reading. The first-stage
 * latches of consolidating clusters go with it.
 *
 * While the UPS is still on battery (or was when last seen), a release lets its trigger fire
 * again within seconds and shut its targets down a second time — a host someone has just powered
 * back on included. Such a release needs `confirmDuringOutage` (else 409 saying exactly that)
 * and is audited and recorded as one, with the reading it was made on.
 */
export async function releaseLatch(
  db: Database,
  input: z.input<typeof ZReleaseLatch>,
  actor: AuditActor,
): Promise<LatchReleased> {
  const { upsId, confirmDuringOutage } = ZReleaseLatch.parse(input);
  const released = await audited(
    db,
    {
      actor,
      action: "power.latch_release",
      target: `ups:${upsId}`,
      detail: (result) => result.audit,
    },
    () =>
      db.transaction(async (tx) => {
        const [row] = await tx
          .select({
            name: upsDevices.name,
            latchedAt: upsMonitorState.latchedAt,
            reason: upsMonitorState.latchedReason,
            stages: upsMonitorState.consolidateLatches,
            reading: upsMonitorState.lastReading,
            reachable: upsMonitorState.reachable,
            alarmSince: upsMonitorState.alarmSince,
          })
          .from(upsDevices)
          .leftJoin(upsMonitorState, eq(upsMonitorState.upsId, upsDevices.id))
          .where(eq(upsDevices.id, upsId))
          .for("update", { of: upsDevices });
        if (!row) throw new AppError("not_found", "That UPS does not exist (any more).");
        const stages = Object.keys(row.stages ?? {}).length;
        if (!row.latchedAt && stages === 0)
          throw new AppError("conflict", `UPS ${row.name} has no latched trigger to release.`);

        const reading = row.reading;
        // As the UPS card says it: no alarm and not known unreachable.
        const current = row.reachable !== false && row.alarmSince === null;
        const duringOutage = releaseIsDuringOutage({ reading });
        let warning: string | null = null;
        if (reading && duringOutage) {
          // What this UPS's trigger shuts down, as a run would: what a release lets happen again.
          const preview = await planPreview(tx as unknown as Database);
          const group = preview.groups.find((g) => g.ups.id === upsId);
          warning = releaseDuringOutageWarning({
            upsName: row.name,
            reading,
            readingIsCurrent: current,
            mode: preview.mode,
            targets: group?.targets.map((t) => t.name) ?? [],
          });
          if (!confirmDuringOutage) {
            throw new AppError(
              "conflict",
              `${warning} Release it during the outage only if that is what you want, and confirm that you do (confirmDuringOutage: true).`,
              {
                confirmDuringOutage: [
                  "The UPS is on battery: confirm that its trigger may fire again and shut its targets down again.",
                ],
              },
            );
          }
        }
        const audit: Record<string, unknown> =
          reading && duringOutage
            ? {
                duringOutage: true,
                reading: {
                  at: reading.at,
                  rawStatus: reading.rawStatus,
                  chargePercent: reading.chargePercent,
                  runtimeSeconds: reading.runtimeSeconds,
                  current,
                },
                warning,
              }
            : { duringOutage: false };

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
        const by =
          reading && duringOutage
            ? `by ${actor.name} during an outage (${outageReadingWords(reading)}), so its trigger may fire again`
            : `by ${actor.name}`;
        const what = row.latchedAt
          ? `latch released ${by} (it fired ${row.latchedAt.toISOString()}: ${row.reason ?? ""})`
          : `released ${by}`;
        await recordPowerEvents(tx, [
          {
            severity: "warning",
            kind: "latch.released",
            message: `${row.name}: ${what}${stages > 0 ? `; with it the first-stage latch of ${stages} consolidating cluster(s)` : ""}`,
            upsId,
            ...(duringOutage ? { data: { duringOutage: true, reading } } : {}),
          },
        ]);
        return { audit, duringOutage };
      }),
  );
  return { upsId, duringOutage: released.duringOutage };
}
