import { eq, sql } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { credentials, hosts } from "@/lib/db/schema";
import { AppError } from "@/lib/errors";

type Executor = Pick<Database, "select" | "execute">;

/**
 * Whether `memberHostId` can be joined through (issue 31): a host the console onboarded, not
 * retired, whose latest run succeeded (active), whose API certificate the console pinned (the
 * join trusts that fingerprint and nothing read fresh from the network), and whose root
 * password the console holds (pve-cluster's join logs in to the member as root@pam with it).
 * Quorum is the join step's to check on the member itself, at the time of the join.
 * Refusals are field errors on `cluster.memberHostId`.
 */
export async function assertJoinableMember(db: Executor, memberHostId: string): Promise<void> {
  const refuse = (why: string): never => {
    throw new AppError("invalid_input", why, { "cluster.memberHostId": [why] });
  };
  const [member] = await db
    .select({
      id: hosts.id,
      name: hosts.name,
      sshUser: hosts.sshUser,
      retiredAt: hosts.retiredAt,
      apiCertSha256: hosts.apiCertSha256,
      credentialKind: credentials.kind,
    })
    .from(hosts)
    .innerJoin(credentials, eq(credentials.id, hosts.credentialId))
    .where(eq(hosts.id, memberHostId));
  if (!member) return refuse("No such host: choose a host the console onboarded.");
  if (member.retiredAt !== null) return refuse(`${member.name} is retired.`);
  const latest = await db.execute<{ status: string }>(sql`
    select status from runs where host_id = ${memberHostId} order by created_at desc limit 1`);
  if (latest.rows[0]?.status !== "succeeded") {
    return refuse(`${member.name} is not active: its onboarding has not succeeded (yet).`);
  }
  if (member.apiCertSha256 === null) {
    return refuse(`The console has pinned no API certificate for ${member.name}.`);
  }
  if (member.sshUser !== "root" || member.credentialKind !== "password") {
    return refuse(
      `Joining logs in to ${member.name} as root with its password (as pvecm add does); the console reaches it ${
        member.sshUser === "root" ? "by key" : `as ${member.sshUser}`
      }. Edit ${member.name} to use root's password, or join by hand.`,
    );
  }
}
