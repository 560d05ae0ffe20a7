import { inArray } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { powerControllers, runs } from "@/lib/db/schema";
import type { PowerMode } from "@/lib/power/config/settings";
import { readPowerSettings } from "@/lib/power/config/power-settings-store";
import { buildPowerBackPlan } from "@/lib/power/power-back/back-plan";
import {
  outageToBringBack,
  runningPowerBackRuns,
} from "@/lib/power/power-back-pipeline/start-power-back";
import { guestsRecordedBy } from "@/lib/power/records/guests-before";

/** Which kind of power controller a host has. */
export type ControllerKind = "redfish" | "ipmi" | "wol" | "pve-wol";

/**
 * What "Bring back now" would do if pressed now — the dialog says exactly this — or why it
 * would be refused. The same plan PlanPowerBack freezes (buildPowerBackPlan over the open
 * outage's shutdown runs and recorded guests), with the stored controller of each host (never a
 * BMC read: this is asked on every look at the power page).
 */
export type PowerBackPreview =
  | { refused: string }
  | {
      mode: PowerMode;
      /** In power-on order; `controller` null: it will not come back on its own. */
      hosts: { name: string; controller: ControllerKind | null }[];
      guests: number;
      /** Clusters whose Ceph flags or HA this outage changed, and what is restored. */
      clusters: { name: string; cephFlags: string[]; haDisarmed: boolean }[];
    };

export async function previewPowerBack(db: Database): Promise<PowerBackPreview> {
  if ((await runningPowerBackRuns(db)).length > 0)
    return { refused: "A way back is running: follow it under “Latest way back”." };
  const outage = await outageToBringBack(db, new Date());
  if (!outage) {
    return {
      refused:
        "No outage to come back from: no shutdown run since the last way back (within the last 7 days).",
    };
  }
  if (outage.shutdownRunning)
    return { refused: "The outage's shutdown run is still going: bring back once it has ended." };
  const [shutdownRuns, guests, settings] = await Promise.all([
    db
      .select({ id: runs.id, context: runs.context })
      .from(runs)
      .where(inArray(runs.id, outage.shutdownRunIds))
      .orderBy(runs.createdAt, runs.id),
    guestsRecordedBy(db, outage.shutdownRunIds),
    readPowerSettings(db),
  ]);
  const plan = buildPowerBackPlan({
    runs: shutdownRuns,
    guests,
    mode: settings.mode,
    guestParallelism: settings.shutdown.guestParallelism,
    now: new Date(),
  });
  const hostIds = plan.hosts.flatMap((h) => (h.hostId ? [h.hostId] : []));
  const controllers =
    hostIds.length === 0
      ? []
      : await db
          .select({ hostId: powerControllers.hostId, kind: powerControllers.kind })
          .from(powerControllers)
          .where(inArray(powerControllers.hostId, hostIds));
  return {
    mode: plan.mode,
    hosts: plan.hosts.map((h) => ({
      name: h.name,
      controller: controllers.find((c) => c.hostId === h.hostId)?.kind ?? null,
    })),
    guests: plan.guests.length,
    clusters: plan.clusters
      .filter((c) => c.cephFlags.length > 0 || c.haDisarmed)
      .map((c) => ({ name: c.name, cephFlags: c.cephFlags, haDisarmed: c.haDisarmed })),
  };
}
