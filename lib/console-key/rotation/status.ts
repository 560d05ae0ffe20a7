import { alias } from "drizzle-orm/pg-core";
import { asc, desc, eq } from "drizzle-orm";

import type { Database } from "@/lib/db/client";
import { consoleKeyRotationHosts, consoleKeyRotations, consoleKeys, runs } from "@/lib/db/schema";

export type RotationHostStatus = {
  hostId: string;
  hostName: string;
  outcome: (typeof consoleKeyRotationHosts.$inferSelect)["outcome"];
  detail: string | null;
  updatedAt: Date;
};

/** A rotation as the key page and `GET /api/console-key/rotations/:id` show it. */
export type RotationStatus = {
  id: string;
  runId: string;
  runStatus: (typeof runs.$inferSelect)["status"];
  phase: string | null;
  failureReason: string | null;
  fromFingerprint: string;
  toFingerprint: string;
  startedBy: string;
  startedAt: Date;
  finishedAt: Date | null;
  hosts: RotationHostStatus[];
};

const fromKey = alias(consoleKeys, "from_key");
const toKey = alias(consoleKeys, "to_key");

async function read(
  db: Pick<Database, "select">,
  where: { id: string } | "latest",
): Promise<RotationStatus | null> {
  const query = db
    .select({
      id: consoleKeyRotations.id,
      runId: consoleKeyRotations.runId,
      runStatus: runs.status,
      phase: runs.phase,
      failureReason: runs.failureReason,
      fromFingerprint: fromKey.fingerprint,
      toFingerprint: toKey.fingerprint,
      startedBy: consoleKeyRotations.startedBy,
      startedAt: consoleKeyRotations.startedAt,
      finishedAt: consoleKeyRotations.finishedAt,
    })
    .from(consoleKeyRotations)
    .innerJoin(runs, eq(runs.id, consoleKeyRotations.runId))
    .innerJoin(fromKey, eq(fromKey.id, consoleKeyRotations.fromKeyId))
    .innerJoin(toKey, eq(toKey.id, consoleKeyRotations.toKeyId));
  const [rotation] =
    where === "latest"
      ? await query.orderBy(desc(consoleKeyRotations.startedAt)).limit(1)
      : await query.where(eq(consoleKeyRotations.id, where.id));
  if (!rotation) return null;
  const hostRows = await db
    .select({
      hostId: consoleKeyRotationHosts.hostId,
      hostName: consoleKeyRotationHosts.hostName,
      outcome: consoleKeyRotationHosts.outcome,
      detail: consoleKeyRotationHosts.detail,
      updatedAt: consoleKeyRotationHosts.updatedAt,
    })
    .from(consoleKeyRotationHosts)
    .where(eq(consoleKeyRotationHosts.rotationId, rotation.id))
    .orderBy(asc(consoleKeyRotationHosts.hostName));
  return { ...rotation, hosts: hostRows };
}

export function rotationStatus(
  db: Pick<Database, "select">,
  rotationId: string,
): Promise<RotationStatus | null> {
  return read(db, { id: rotationId });
}

export function latestRotationStatus(db: Pick<Database, "select">): Promise<RotationStatus | null> {
  return read(db, "latest");
}
