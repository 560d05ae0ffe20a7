import { and, asc, eq, gt, lt, sql } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { loginFailures } from "@/lib/db/schema";

/** At most this many failed sign-ins per (name, address)… */
export const MAX_LOGIN_FAILURES = 5;
/** …within this sliding window. */
export const LOGIN_FAILURE_WINDOW_MS = 15 * 60 * 1000;

export type LoginKey = { name: string; address: string };
export type LoginGate = { allowed: true } | { allowed: false; retryAfterMs: number };

const keyOf = ({ name, address }: LoginKey) => ({ nameKey: name.toLowerCase(), address });

/**
 * Whether another attempt is allowed now. When not, `retryAfterMs` is when the oldest failure
 * that keeps the count at the limit leaves the window.
 */
export async function checkLoginGate(
  db: Pick<Database, "select">,
  key: LoginKey,
  now = new Date(),
): Promise<LoginGate> {
  const { nameKey, address } = keyOf(key);
  const since = new Date(now.getTime() - LOGIN_FAILURE_WINDOW_MS);
  const failures = await db
    .select({ at: loginFailures.at })
    .from(loginFailures)
    .where(
      and(
        eq(loginFailures.nameKey, nameKey),
        eq(loginFailures.address, address),
        gt(loginFailures.at, since),
      ),
    )
    .orderBy(asc(loginFailures.at));
  if (failures.length < MAX_LOGIN_FAILURES) return { allowed: true };
  // Attempts open again once the count drops below the limit: when failure #(n - max) ages out.
  const freeing = failures[failures.length - MAX_LOGIN_FAILURES]!.at;
  return {
    allowed: false,
    retryAfterMs: Math.max(1000, freeing.getTime() + LOGIN_FAILURE_WINDOW_MS - now.getTime()),
  };
}

/**
 * Reserves one attempt: under a per-(name, address) advisory lock, checks the gate and, when
 * allowed, records the attempt as a failure right away. The caller clears it on success
 * (clearLoginFailures). Recording before the password check is what makes the limit exact under
 * concurrency: ten parallel guesses get five password checks, not ten.
 */
export async function reserveLoginAttempt(
  db: Database,
  key: LoginKey,
  now = new Date(),
): Promise<LoginGate> {
  const { nameKey, address } = keyOf(key);
  return db.transaction(async (tx) => {
    await tx.execute(
      sql`select pg_advisory_xact_lock(hashtextextended(${`login:${nameKey}:${address}`}, 0))`,
    );
    const gate = await checkLoginGate(tx, key, now);
    if (!gate.allowed) return gate;
    await tx.insert(loginFailures).values({ nameKey, address, at: now });
    await tx
      .delete(loginFailures)
      .where(lt(loginFailures.at, new Date(now.getTime() - LOGIN_FAILURE_WINDOW_MS)));
    return gate;
  });
}

/** A successful sign-in forgives the pair's earlier failures. */
export async function clearLoginFailures(db: Database, key: LoginKey): Promise<void> {
  const { nameKey, address } = keyOf(key);
  await db
    .delete(loginFailures)
    .where(and(eq(loginFailures.nameKey, nameKey), eq(loginFailures.address, address)));
}
