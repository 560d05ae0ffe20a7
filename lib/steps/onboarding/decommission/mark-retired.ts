import { and, eq, isNull } from "drizzle-orm";
import { credentials, events, hosts } from "@/lib/db/schema";
import { advance, type Step } from "@/lib/pipeline/step";
import { seal } from "@/lib/secrets/seal";
import type { HostServices } from "../services";

/**
 * Goal: the host is retired — no new runs, no template checks, history kept — and the console
 * holds no secret for it any more. Whatever the steps before achieved: the console never
 * connects to a retired host again, and what was left on an unreachable host is removed there
 * by hand (no secret of ours needed). The API token's secret is deleted; the SSH credential's
 * secret is overwritten with an empty one (the row stays, as the host row must reference one,
 * until an admin deletes the host).
 */
export const markRetired: Step<HostServices> = {
  name: "MarkRetired",
  maxDuration: () => 60,
  async visit(ctx) {
    const host = await ctx.services.host();
    const db = ctx.services.db;
    const retiredAt = new Date();
    await db.transaction(async (tx) => {
      await tx
        .update(hosts)
        .set({
          retiredAt,
          apiTokenCredentialId: null,
          subscriptionKeyCredentialId: null,
          updatedAt: retiredAt,
        })
        .where(and(eq(hosts.id, host.id), isNull(hosts.retiredAt)));
      if (host.apiTokenCredentialId) {
        await tx.delete(credentials).where(eq(credentials.id, host.apiTokenCredentialId));
      }
      // The key stays applied on the node (Proxmox's own state); the console keeps no copy.
      if (host.subscriptionKeyCredentialId) {
        await tx.delete(credentials).where(eq(credentials.id, host.subscriptionKeyCredentialId));
      }
      await tx
        .update(credentials)
        .set({ sealed: seal("{}") })
        .where(eq(credentials.id, host.credentialId));
      await tx.insert(events).values({
        hostId: host.id,
        runId: ctx.runId,
        kind: "host.retired",
        actor: "engine",
        message: `${host.name} retired: no new runs, no template checks; its history stays readable`,
      });
    });
    return advance(
      `${host.name} retired; the console deleted its secrets for it (SSH credential${host.apiTokenCredentialId ? ", API token secret" : ""}${host.subscriptionKeyCredentialId ? ", subscription key" : ""})`,
    );
  },
};
