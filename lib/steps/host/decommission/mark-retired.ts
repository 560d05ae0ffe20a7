import { and, eq, isNull } from "drizzle-orm";
import { credentials, events, hosts } from "@/lib/db/schema";
import { advance, type Step } from "@/lib/pipeline/step";
import type { HostServices } from "../services";

/**
 * Goal: the host is retired — no new runs, no template checks, history kept. The API token's
 * secret is deleted here whatever RemoveApiToken achieved: the console never calls that host's
 * API again, and a token left on an unreachable host is removed there by hand (no secret
 * needed). The SSH credential stays sealed until the host is deleted (a retired host's row
 * needs one; deleting the host deletes it).
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
        .set({ retiredAt, apiTokenCredentialId: null, updatedAt: retiredAt })
        .where(and(eq(hosts.id, host.id), isNull(hosts.retiredAt)));
      if (host.apiTokenCredentialId) {
        await tx.delete(credentials).where(eq(credentials.id, host.apiTokenCredentialId));
      }
      await tx.insert(events).values({
        hostId: host.id,
        runId: ctx.runId,
        kind: "host.retired",
        actor: "engine",
        message: `${host.name} retired: no new runs, no template checks; its history stays readable`,
      });
    });
    return advance(
      `${host.name} retired${host.apiTokenCredentialId ? "; the API token's secret deleted from the console" : ""}`,
    );
  },
};
