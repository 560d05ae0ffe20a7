import { and, desc, eq, gt, ne, not } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { sessions, users } from "@/lib/db/schema";
import type { Role } from "@/lib/roles";
import { notifyAccessChanged } from "./access-changed";
import { randomToken, sha256Hex } from "./secret-token";

// The session recipe Lucia's authors now document instead of the library: a random token in the
// cookie, its SHA-256 as the row id, validation = one indexed lookup joined to the user.

/** A session ends this long after sign-in, however active it is. */
export const SESSION_ABSOLUTE_MS = 7 * 24 * 60 * 60 * 1000;
/** …or this long after its last request: a console left open on a shared screen signs out. */
export const SESSION_IDLE_MS = 12 * 60 * 60 * 1000;
/** `last_seen_at` is written at most this often, not on every request. */
const LAST_SEEN_RESOLUTION_MS = 60 * 1000;

export type SessionUser = { id: string; name: string; role: Role };
export type ValidSession = { sessionId: string; expiresAt: Date; user: SessionUser };

/** Where a sign-in came from, kept with the session so its owner can tell their browsers apart. */
export type SessionOrigin = { address: string | null; userAgent: string | null };

export async function createSession(
  db: Database,
  userId: string,
  origin: SessionOrigin = { address: null, userAgent: null },
  now = new Date(),
): Promise<{ token: string; expiresAt: Date }> {
  const token = randomToken();
  const expiresAt = new Date(now.getTime() + SESSION_ABSOLUTE_MS);
  await db.insert(sessions).values({
    id: sha256Hex(token),
    userId,
    createdAt: now,
    lastSeenAt: now,
    expiresAt,
    address: origin.address,
    userAgent: origin.userAgent?.slice(0, 300) ?? null,
  });
  return { token, expiresAt };
}

/**
 * The session a cookie token names, or null when it is unknown, past its absolute expiry, idle
 * too long, or its user is disabled. Role and name are read fresh each time, so a role change
 * or a disable takes effect on the next request. `touch: false` checks without counting as
 * activity: an open live stream re-checking its session must not keep an idle console signed in.
 */
export async function validateSessionToken(
  db: Database,
  token: string,
  now = new Date(),
  { touch = true }: { touch?: boolean } = {},
): Promise<ValidSession | null> {
  const sessionId = sha256Hex(token);
  const [row] = await db
    .select({
      expiresAt: sessions.expiresAt,
      lastSeenAt: sessions.lastSeenAt,
      user: { id: users.id, name: users.name, role: users.role, disabled: users.disabled },
    })
    .from(sessions)
    .innerJoin(users, eq(users.id, sessions.userId))
    .where(eq(sessions.id, sessionId));
  if (!row) return null;
  const expired =
    now.getTime() >= row.expiresAt.getTime() ||
    now.getTime() - row.lastSeenAt.getTime() >= SESSION_IDLE_MS;
  if (expired) {
    await db.delete(sessions).where(eq(sessions.id, sessionId));
    return null;
  }
  if (row.user.disabled) return null;
  if (touch && now.getTime() - row.lastSeenAt.getTime() >= LAST_SEEN_RESOLUTION_MS) {
    await db.update(sessions).set({ lastSeenAt: now }).where(eq(sessions.id, sessionId));
  }
  const { id, name, role } = row.user;
  return { sessionId, expiresAt: row.expiresAt, user: { id, name, role } };
}

export async function invalidateSessionToken(db: Database, token: string): Promise<void> {
  const ended = await db
    .delete(sessions)
    .where(eq(sessions.id, sha256Hex(token)))
    .returning({ userId: sessions.userId });
  for (const { userId } of ended) await notifyAccessChanged(db, userId);
}

/**
 * Signs a user out everywhere (password reset), optionally keeping the session in use. Returns
 * how many sessions ended; their open pages are told at once (notifyAccessChanged).
 */
export async function invalidateUserSessions(
  db: Database,
  userId: string,
  keepToken?: string,
): Promise<number> {
  const ended = await db
    .delete(sessions)
    .where(
      keepToken
        ? and(eq(sessions.userId, userId), ne(sessions.id, sha256Hex(keepToken)))
        : eq(sessions.userId, userId),
    )
    .returning({ userId: sessions.userId });
  await notifyAccessChanged(db, userId);
  return ended.length;
}

/** A session as its owner sees it: when it began, was last used and ends; never its id. */
export type SessionSummary = SessionOrigin & {
  createdAt: Date;
  lastSeenAt: Date;
  /** The earlier of the absolute end and the idle end. */
  endsAt: Date;
  /** The session of the browser asking. */
  current: boolean;
};

/** The user's sessions that can still be used, most recently active first. */
export async function listUserSessions(
  db: Database,
  userId: string,
  currentToken: string | undefined,
  now = new Date(),
): Promise<SessionSummary[]> {
  const currentId = currentToken ? sha256Hex(currentToken) : null;
  const rows = await db
    .select({
      id: sessions.id,
      createdAt: sessions.createdAt,
      lastSeenAt: sessions.lastSeenAt,
      expiresAt: sessions.expiresAt,
      address: sessions.address,
      userAgent: sessions.userAgent,
    })
    .from(sessions)
    .where(and(eq(sessions.userId, userId), usableAt(now)))
    .orderBy(desc(sessions.lastSeenAt));
  return rows.map((row) => ({
    address: row.address,
    userAgent: row.userAgent,
    createdAt: row.createdAt,
    lastSeenAt: row.lastSeenAt,
    endsAt: new Date(Math.min(row.expiresAt.getTime(), row.lastSeenAt.getTime() + SESSION_IDLE_MS)),
    current: row.id === currentId,
  }));
}

/** Removes sessions nobody can use any more (called on sign-in, so the table stays small). */
export async function pruneExpiredSessions(db: Database, now = new Date()): Promise<void> {
  await db.delete(sessions).where(not(usableAt(now)));
}

/**
 * A session row still usable at `now`, in SQL: before its absolute end and not idle too long —
 * the same rule validateSessionToken applies to the row it read.
 */
function usableAt(now: Date) {
  return and(
    gt(sessions.expiresAt, now),
    gt(sessions.lastSeenAt, new Date(now.getTime() - SESSION_IDLE_MS)),
  )!;
}
