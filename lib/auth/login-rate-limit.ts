import { and, asc, eq, gt, lt } from "drizzle-orm";
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
  db: Database,
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

/** Counts a failed attempt, and prunes rows older than the window (any key) while at it. */
export async function recordLoginFailure(
  db: Database,
  key: LoginKey,
  now = new Date(),
): Promise<void> {
  await db.insert(loginFailures).values({ ...keyOf(key), at: now });
  await db
    .delete(loginFailures)
    .where(lt(loginFailures.at, new Date(now.getTime() - LOGIN_FAILURE_WINDOW_MS)));
}

/** A successful sign-in forgives the pair's earlier failures. */
export async function clearLoginFailures(db: Database, key: LoginKey): Promise<void> {
  const { nameKey, address } = keyOf(key);
  await db
    .delete(loginFailures)
    .where(and(eq(loginFailures.nameKey, nameKey), eq(loginFailures.address, address)));
}
