import { and, eq, isNull } from "drizzle-orm";

import type { Database } from "@/lib/db/client";
import { consoleKeyCredentials, consoleKeys, credentials, hosts } from "@/lib/db/schema";

/** Which hosts depend on which console key: what a rotation moves and what it may retire. */

/**
 * The hosts a rotation would move: every host, not retired, whose credential is the console's
 * key (whichever console key it is on now).
 */
export async function hostsOnConsoleKey(
  db: Pick<Database, "select">,
): Promise<Array<{ id: string; name: string }>> {
  return db
    .select({ id: hosts.id, name: hosts.name })
    .from(hosts)
    .innerJoin(credentials, eq(credentials.id, hosts.credentialId))
    .innerJoin(consoleKeyCredentials, eq(consoleKeyCredentials.credentialId, credentials.id))
    .where(and(eq(credentials.kind, "console_key"), isNull(hosts.retiredAt)))
    .orderBy(hosts.name);
}

/**
 * Retiring keys no host depends on any more become `retired` (a retired host does not count:
 * decommissioning removed the key from it); returns how many did.
 */
export async function retireUnusedKeys(db: Pick<Database, "update" | "select">): Promise<number> {
  const retiring = await db
    .select({ id: consoleKeys.id })
    .from(consoleKeys)
    .where(eq(consoleKeys.state, "retiring"));
  let retired = 0;
  for (const key of retiring) {
    const [user] = await db
      .select({ id: hosts.id })
      .from(consoleKeyCredentials)
      .innerJoin(hosts, eq(hosts.credentialId, consoleKeyCredentials.credentialId))
      .where(and(eq(consoleKeyCredentials.consoleKeyId, key.id), isNull(hosts.retiredAt)))
      .limit(1);
    if (user) continue;
    const done = await db
      .update(consoleKeys)
      .set({ state: "retired", retiredAt: new Date() })
      .where(and(eq(consoleKeys.id, key.id), eq(consoleKeys.state, "retiring")))
      .returning({ id: consoleKeys.id });
    retired += done.length;
  }
  return retired;
}
