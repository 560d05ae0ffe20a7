import { randomUUID } from "node:crypto";
import { and, eq, isNull } from "drizzle-orm";

import type { Database } from "@/lib/db/client";
import { consoleKeyRotationHosts, consoleKeyRotations, consoleKeys, runs } from "@/lib/db/schema";
import { AppError } from "@/lib/errors";
import { startRun } from "@/lib/runs/start-run";

import { ensureConsoleKey, insertConsoleKey } from "@/lib/host-access/console-key-store";
import { hostsOnConsoleKey } from "./keys-in-use";
import { rotateConsoleKeyPipeline } from "./pipeline";

export type StartedRotation = {
  rotationId: string;
  runId: string;
  fromKeyId: string;
  toKeyId: string;
  hostCount: number;
};

/**
 * Starts a key rotation in one transaction: the active key becomes `retiring`, a new pair
 * becomes `active` (new hosts get it from now on), every host on the console's key is listed
 * as pending, and the rotation run is started. Hosts keep logging in with the key recorded for
 * them until the run has proven the new key on each.
 */
export async function startRotation(
  db: Database,
  actor: { name: string },
  pipeline = rotateConsoleKeyPipeline,
): Promise<StartedRotation> {
  await ensureConsoleKey(db);
  return db.transaction(async (tx) => {
    // Serializes rotations: a second request waits here, then sees the unfinished rotation.
    const [current] = await tx
      .select({ id: consoleKeys.id })
      .from(consoleKeys)
      .where(eq(consoleKeys.state, "active"))
      .for("update");
    // The active row was just retired by a rotation that committed while this one waited for
    // the lock (found by the fuzz test: concurrent requests got a 500).
    if (!current) {
      throw new AppError(
        "conflict",
        "A key rotation was started a moment ago. Wait for it to finish; its progress is on the SSH key page.",
      );
    }
    // A rotation whose run failed (retried too often) no longer blocks a new one; a new
    // rotation moves every host from whatever key it is on, so nothing is left behind.
    const [running] = await tx
      .select({ id: consoleKeyRotations.id })
      .from(consoleKeyRotations)
      .innerJoin(runs, eq(runs.id, consoleKeyRotations.runId))
      .where(and(isNull(consoleKeyRotations.finishedAt), eq(runs.status, "running")));
    if (running) {
      throw new AppError(
        "conflict",
        "A key rotation is already in progress. Wait for it to finish; its progress is on the SSH key page.",
      );
    }
    await tx
      .update(consoleKeys)
      .set({ state: "retiring" })
      .where(and(eq(consoleKeys.id, current.id), eq(consoleKeys.state, "active")));
    const next = await insertConsoleKey(tx, "active");
    if (!next) throw new Error("could not insert the new console key");

    const rotationId = randomUUID();
    const targets = await hostsOnConsoleKey(tx);
    const runId = await startRun(tx, {
      pipeline,
      hostId: null,
      actor: actor.name,
      context: { rotationId },
    });
    await tx.insert(consoleKeyRotations).values({
      id: rotationId,
      runId,
      fromKeyId: current.id,
      toKeyId: next.id,
      startedBy: actor.name,
    });
    if (targets.length > 0) {
      await tx
        .insert(consoleKeyRotationHosts)
        .values(targets.map((host) => ({ rotationId, hostId: host.id, hostName: host.name })));
    }
    return {
      rotationId,
      runId,
      fromKeyId: current.id,
      toKeyId: next.id,
      hostCount: targets.length,
    };
  });
}
