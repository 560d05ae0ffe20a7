import { and, eq, inArray, isNotNull, or } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { credentials, events, hosts, runs } from "@/lib/db/schema";
import { AppError } from "@/lib/errors";
import { audited, type AuditActor } from "@/lib/audit/record-audit";
import { lockHost } from "@/lib/host-access/host-guards";

export type DeletedHost = {
  hostId: string;
  name: string;
  address: string;
  nodeName: string | null;
  retiredAt: string;
  /** Runs deleted with the host (their logs, visits and events went with them). */
  runs: number;
};

/**
 * Deletes a retired host for good: the row, its credentials, its runs with their logs, step
 * visits and events. Only a retired host: retirement is the state that keeps history readable,
 * deletion is the explicit "forget this machine" after it (and frees its name for a
 * reinstalled machine). What remains is the audit log's `host.delete` entry, written by the
 * caller with this function's answer (name, address, node, retirement time, run count).
 */
export async function deleteHost(
  db: Database,
  input: { hostId: string; actor: string },
): Promise<DeletedHost> {
  return db.transaction(async (tx) => {
    const host = await lockHost(tx, input.hostId);
    if (!host.retiredAt) {
      throw new AppError(
        "conflict",
        `${host.name} is not retired; only a retired host can be deleted. Decommission it first (the host page's Decommission button), then delete it.`,
      );
    }
    const runIds = (
      await tx.select({ id: runs.id }).from(runs).where(eq(runs.hostId, host.id))
    ).map((r) => r.id);
    // Events point at the host, its runs, or both; logs, visits and abort requests cascade
    // with their runs.
    await tx
      .delete(events)
      .where(
        runIds.length > 0
          ? or(eq(events.hostId, host.id), inArray(events.runId, runIds))
          : eq(events.hostId, host.id),
      );
    if (runIds.length > 0) await tx.delete(runs).where(inArray(runs.id, runIds));
    await tx.delete(hosts).where(and(eq(hosts.id, host.id), isNotNull(hosts.retiredAt)));
    const secrets = [
      host.credentialId,
      host.apiTokenCredentialId,
      host.subscriptionKeyCredentialId,
    ].filter((id): id is string => id !== null);
    await tx.delete(credentials).where(inArray(credentials.id, secrets));
    return {
      hostId: host.id,
      name: host.name,
      address: host.address,
      nodeName: host.nodeName,
      retiredAt: host.retiredAt.toISOString(),
      runs: runIds.length,
    };
  });
}

/**
 * deleteHost under the audit log's `host.delete`, with what identified the host (name, address,
 * node) in the entry's detail: after the deletion the audit log is the only record left.
 * Shared by the server action and `DELETE /api/hosts/:id`.
 */
export async function auditedHostDeletion(
  db: Database,
  actor: AuditActor,
  hostId: string,
): Promise<DeletedHost> {
  const [host] = await db
    .select({ name: hosts.name, address: hosts.address, nodeName: hosts.nodeName })
    .from(hosts)
    .where(eq(hosts.id, hostId));
  return audited(
    db,
    { actor, action: "host.delete", target: `host:${hostId}`, ...(host ? { detail: host } : {}) },
    () => deleteHost(db, { hostId, actor: actor.name }),
  );
}
