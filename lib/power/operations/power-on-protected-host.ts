import "server-only";
import { and, eq, isNotNull, type SQL } from "drizzle-orm";

import type { AuditActor } from "@/lib/audit/record-audit";
import type { Database } from "@/lib/db/client";
import {
  hosts,
  powerTargetFeeds,
  powerTargets,
  upsDevices,
  upsMonitorState,
} from "@/lib/db/schema";
import { AppError } from "@/lib/errors";
import { auditedPowerOn, type PowerOnOutcome } from "@/lib/power-controllers/power-on-host";
import {
  auditedTargetPowerOn,
  type TargetPowerOnOutcome,
} from "@/lib/power-controllers/target-controller";
import { endOutageLatches } from "../records/end-outage-latches";

/**
 * An operator's "Power on" of a host, as power protection needs it (the controller's part is
 * lib/power-controllers/power-on-host.ts):
 *
 * - **Refused while a feed's trigger holds on battery.** The outage's shutdown call covers the
 *   host for the whole outage (one call per target per outage): powered on now, it would not be
 *   shut down again and would run into the hard power loss. An admin who means it releases the
 *   latch first (confirmed as a release during an outage), which makes every target due again.
 * - **Ends the outage once mains is back**: a latch asleep on mains still names the outage, so
 *   the host — on now — is released from it (records/end-outage-latches.ts); the next loss of
 *   mains shuts it down again.
 */
export async function powerOnProtectedHost(
  db: Database,
  actor: AuditActor,
  hostId: string,
): Promise<PowerOnOutcome> {
  await refuseWhileTriggerHolds(db, eq(powerTargets.hostId, hostId), "host");
  const outcome = await auditedPowerOn(db, actor, hostId);
  const [host] = await db.select({ name: hosts.name }).from(hosts).where(eq(hosts.id, hostId));
  await endOutageLatches(db, await feedsOf(db, eq(powerTargets.hostId, hostId)), {
    hostName: host?.name ?? hostId,
    actor: actor.name,
  });
  return outcome;
}

/**
 * A backup server's "Power on" through its controller, as power protection needs it: refused
 * while a feed's trigger holds on battery, and the outage ended for its feeds once mains is back
 * — exactly as a host's (powerOnProtectedHost).
 */
export async function powerOnProtectedPbs(
  db: Database,
  actor: AuditActor,
  targetId: string,
): Promise<TargetPowerOnOutcome> {
  await refuseWhileTriggerHolds(db, eq(powerTargets.id, targetId), "backup server");
  const outcome = await auditedTargetPowerOn(db, actor, targetId);
  const [target] = await db
    .select({ name: powerTargets.name })
    .from(powerTargets)
    .where(eq(powerTargets.id, targetId));
  await endOutageLatches(db, await feedsOf(db, eq(powerTargets.id, targetId)), {
    hostName: target?.name ?? targetId,
    actor: actor.name,
  });
  return outcome;
}

async function feedsOf(db: Database, which: SQL): Promise<string[]> {
  const rows = await db
    .select({ upsId: powerTargetFeeds.upsId })
    .from(powerTargets)
    .innerJoin(powerTargetFeeds, eq(powerTargetFeeds.targetId, powerTargets.id))
    .where(which)
    .orderBy(powerTargetFeeds.upsId);
  return rows.map((r) => r.upsId);
}

async function refuseWhileTriggerHolds(db: Database, which: SQL, what: string): Promise<void> {
  const feeds = await db
    .select({
      upsId: powerTargetFeeds.upsId,
      upsName: upsDevices.name,
      dormant: upsMonitorState.latchDormant,
    })
    .from(powerTargets)
    .innerJoin(powerTargetFeeds, eq(powerTargetFeeds.targetId, powerTargets.id))
    .innerJoin(upsDevices, eq(upsDevices.id, powerTargetFeeds.upsId))
    .leftJoin(
      upsMonitorState,
      and(eq(upsMonitorState.upsId, powerTargetFeeds.upsId), isNotNull(upsMonitorState.latchedAt)),
    )
    .where(which)
    .orderBy(upsDevices.name);
  const holding = feeds.filter((f) => f.dormant === false);
  if (holding.length > 0) {
    const names = holding.map((f) => f.upsName).join(", ");
    throw new AppError(
      "conflict",
      `The shutdown trigger of ${names} holds: this outage's shutdown already covers this ${what}, so powered on now it would not be shut down again before the battery runs out. Wait until mains is back — or release the latch on /power first if you mean it (every target of that UPS is then shut down again).`,
    );
  }
}
