import { eq } from "drizzle-orm";
import { audited, type AuditActor } from "@/lib/audit/record-audit";
import type { Database } from "@/lib/db/client";
import { createHostCredential } from "@/lib/host-access/host-credential";
import { credentials, events, hosts } from "@/lib/db/schema";
import { seal } from "@/lib/secrets/seal";
import { AppError, isUniqueViolation } from "@/lib/errors";
import { startRun } from "@/lib/runs/start-run";
import { onboardHostPipeline } from "@/lib/steps/onboarding";
import { assertJoinableMember } from "./cluster-member";
import type { TCreateHost } from "./schemas";

/**
 * Stores the host with its credential (sealed, or a reference to the console's key), and starts its onboarding run, in one transaction:
 * there is never a host without its run, nor a run without its first tick.
 */
export async function createHost(
  db: Database,
  input: TCreateHost,
  actor: string,
): Promise<{ hostId: string; runId: string }> {
  return db.transaction(async (tx) => {
    const taken = () =>
      new AppError("conflict", `A host named ${input.name} already exists.`, {
        name: ["This name is taken; choose another."],
      });
    const [existing] = await tx
      .select({ id: hosts.id })
      .from(hosts)
      .where(eq(hosts.name, input.name));
    if (existing) throw taken();
    const cluster = input.cluster ?? { mode: "none" as const };
    if (cluster.mode === "join") await assertJoinableMember(tx, cluster.memberHostId);
    const credentialId = await createHostCredential(tx, input);
    // Sealed like every secret; only ApplySubscription unseals it, to hand it to the host.
    const subscriptionKeyCredentialId = input.subscriptionKey
      ? (
          await tx
            .insert(credentials)
            .values({ kind: "subscription_key", sealed: seal(input.subscriptionKey) })
            .returning({ id: credentials.id })
        )[0]!.id
      : null;
    const [host] = await tx
      .insert(hosts)
      .values({
        name: input.name,
        address: input.address,
        sshPort: input.sshPort,
        apiPort: input.apiPort,
        sshUser: input.sshUser,
        credentialId,
        clusterMode: cluster.mode,
        clusterName: cluster.mode === "create" ? cluster.name : null,
        clusterLink0: cluster.mode === "none" ? null : cluster.link0,
        clusterMemberHostId: cluster.mode === "join" ? cluster.memberHostId : null,
        subscriptionKeyCredentialId,
      })
      .returning({ id: hosts.id })
      .catch((error: unknown) => {
        // A concurrent request took the name between the check and the insert.
        throw isUniqueViolation(error) ? taken() : error;
      });
    if (!host) throw new Error("inserting the host returned no row");
    await tx.insert(events).values({
      hostId: host.id,
      kind: "host.created",
      actor,
      message: `host ${input.name} (${input.sshUser}@${input.address}:${input.sshPort}) added${
        cluster.mode === "create"
          ? `, to create cluster ${cluster.name}`
          : cluster.mode === "join"
            ? ", to join a cluster"
            : ""
      }${subscriptionKeyCredentialId ? ", with a subscription key" : ""}`,
    });
    const runId = await startRun(tx, { pipeline: onboardHostPipeline, hostId: host.id, actor });
    return { hostId: host.id, runId };
  });
}

/**
 * createHost under the audit log's `host.create`, named by the new host's id with the name in
 * the entry. Shared by the server action and `POST /api/hosts`.
 */
export async function auditedHostCreation(
  db: Database,
  actor: AuditActor,
  input: TCreateHost,
): Promise<{ hostId: string; runId: string }> {
  return audited(
    db,
    {
      actor,
      action: "host.create",
      target: (created) => `host:${created.hostId}`,
      detail: { name: input.name },
    },
    () => createHost(db, input, actor.name),
  );
}
