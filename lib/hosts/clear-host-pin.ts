import { and, eq } from "drizzle-orm";
import { z } from "zod";
import type { Database } from "@/lib/db/client";
import { events, hosts } from "@/lib/db/schema";
import { audited, type AuditActor } from "@/lib/audit/record-audit";
import { AppError } from "@/lib/errors";
import { normalizeFingerprint } from "@/lib/ssh";
import { refuseIfBusy } from "./edit-host";
import { lockHost } from "@/lib/host-access/host-guards";

/**
 * The pin the operator saw in the confirmation dialog. Clearing only that pin means a key that
 * changed again between reading and confirming is never dropped unseen.
 */
export const ZClearHostPin = z.object({
  fingerprint: z
    .string({ error: "Give the pinned fingerprint you are clearing (SHA256:…)." })
    .trim()
    .regex(
      /^(SHA256:)?[A-Za-z0-9+/]{43}=?$/,
      "A fingerprint looks like SHA256: and 43 characters.",
    ),
});
export type TClearHostPin = z.infer<typeof ZClearHostPin>;

/**
 * Forgets the host's SSH host key pin (after a reinstall): the next connection — the edit's
 * connection test or a run's ConnectHost — pins whatever key the host then presents.
 * Refused while a run is running (it would pin mid-run without anyone looking) and for a
 * retired host.
 */
export async function clearHostPin(
  db: Database,
  input: { hostId: string; actor: string; fingerprint: string },
): Promise<{ hostId: string; cleared: string }> {
  const expected = normalizeFingerprint(input.fingerprint);
  return db.transaction(async (tx) => {
    const host = await lockHost(tx, input.hostId);
    await refuseIfBusy(tx, host);
    if (host.hostKeySha256 === null) {
      throw new AppError(
        "conflict",
        `${host.name} has no pinned host key; the next connection pins the key the host presents.`,
      );
    }
    if (host.hostKeySha256 !== expected) {
      throw new AppError(
        "conflict",
        `The pin of ${host.name} is ${host.hostKeySha256}, not ${expected}; nothing was cleared. Reload the page and check the fingerprint again.`,
        { fingerprint: ["This is not the pinned fingerprint."] },
      );
    }
    await tx
      .update(hosts)
      .set({ hostKeySha256: null, hostKeyPinnedAt: null, updatedAt: new Date() })
      .where(and(eq(hosts.id, host.id), eq(hosts.hostKeySha256, expected)));
    await tx.insert(events).values({
      hostId: host.id,
      kind: "host.pin_cleared",
      actor: input.actor,
      message: `SSH host key pin ${expected} of ${host.name} cleared; the next connection pins the key the host presents`,
      data: { fingerprint: expected },
    });
    return { hostId: host.id, cleared: expected };
  });
}

/**
 * clearHostPin under the audit log's `host.clear_pin`, with the cleared fingerprint in the
 * entry. Shared by the server action and `POST /api/hosts/:id/clear-pin`.
 */
export async function auditedHostPinClearing(
  db: Database,
  actor: AuditActor,
  input: { hostId: string; fingerprint: string },
): Promise<{ hostId: string; cleared: string }> {
  const { hostId, fingerprint } = input;
  return audited(
    db,
    { actor, action: "host.clear_pin", target: `host:${hostId}`, detail: { fingerprint } },
    () => clearHostPin(db, { hostId, actor: actor.name, fingerprint }),
  );
}
