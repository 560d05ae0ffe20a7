import { and, asc, eq, inArray } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { powerBackGuests } from "@/lib/db/schema";

/** One guest that ran before the shutdown, as the way back starts it again. */
export type GuestBefore = {
  node: string;
  vmid: number;
  type: "qemu" | "lxc";
  name: string | null;
  startupOrder: number | null;
  upSeconds: number | null;
  haManaged: boolean | null;
  /** What could not be read of it (its config, HA), if anything. */
  problem: string | null;
};

export type GuestsBeforeKey = {
  /** The shutdown run that listed them. */
  runId: string;
  /** The outage, as the shutdown calls name it. */
  dueSince: string;
  targetId?: string | null;
  clusterId?: string | null;
  mode: "armed" | "dry-run";
};

export type RecordedGuest = typeof powerBackGuests.$inferSelect;

/**
 * Records the guests a shutdown run stops (or would stop) as running before, once per run and
 * guest (a visit that records again adds nothing). A node whose guests could not be listed is a
 * row of state `unknown`: the way back says it cannot tell what ran there.
 */
export async function recordGuestsBefore(
  db: Pick<Database, "insert">,
  key: GuestsBeforeKey,
  listed: { guests: readonly GuestBefore[] } | { unknownNode: string; why: string },
): Promise<void> {
  const base = {
    runId: key.runId,
    dueSince: new Date(key.dueSince),
    targetId: key.targetId ?? null,
    clusterId: key.clusterId ?? null,
    mode: key.mode,
  };
  const rows =
    "guests" in listed
      ? listed.guests.map((g) => ({ ...base, ...g, state: "running" as const }))
      : [{ ...base, node: listed.unknownNode, state: "unknown" as const, problem: listed.why }];
  if (rows.length === 0) return;
  await db.insert(powerBackGuests).values(rows).onConflictDoNothing();
}

/** What the shutdown runs recorded, in the order they recorded it. */
export function guestsRecordedBy(
  db: Pick<Database, "select">,
  runIds: readonly string[],
): Promise<RecordedGuest[]> {
  if (runIds.length === 0) return Promise.resolve([]);
  return db
    .select()
    .from(powerBackGuests)
    .where(inArray(powerBackGuests.runId, [...runIds]))
    .orderBy(asc(powerBackGuests.id));
}

/** One run's record for one node (tests and the run's log read it). */
export function guestsRecordedOn(
  db: Pick<Database, "select">,
  runId: string,
  node: string,
): Promise<RecordedGuest[]> {
  return db
    .select()
    .from(powerBackGuests)
    .where(and(eq(powerBackGuests.runId, runId), eq(powerBackGuests.node, node)))
    .orderBy(asc(powerBackGuests.id));
}
