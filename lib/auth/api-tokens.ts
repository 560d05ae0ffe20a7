import { and, desc, eq, isNull, lt, or } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { apiTokens, users } from "@/lib/db/schema";
import { AppError } from "@/lib/errors";
import { notifyLive } from "@/lib/live/notify";
import type { SessionUser } from "./session";
import { notifyAccessChanged } from "./access-changed";
import { randomToken, sha256Hex } from "./secret-token";

/** Marks our tokens, so secret scanners and people recognise one in a script or a log. */
const TOKEN_PREFIX = "clp_";
/** How much of a token stays visible in lists: `clp_` and 8 characters. */
const VISIBLE_PREFIX_LENGTH = TOKEN_PREFIX.length + 8;
const LAST_USED_RESOLUTION_MS = 60 * 1000;

export type ApiTokenSummary = {
  id: string;
  userId: string;
  userName: string;
  label: string;
  prefix: string;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
};

/** Creates a token for `userId`; the plaintext is in the result and nowhere else, ever. */
export async function createApiToken(
  db: Database,
  userId: string,
  label: string,
): Promise<{ id: string; token: string; prefix: string }> {
  const token = `${TOKEN_PREFIX}${randomToken()}`;
  const prefix = token.slice(0, VISIBLE_PREFIX_LENGTH);
  const [row] = await db
    .insert(apiTokens)
    .values({ userId, label, tokenHash: sha256Hex(token), prefix })
    .returning({ id: apiTokens.id });
  await notifyLive(db, { type: "list", list: "users" });
  return { id: row!.id, token, prefix };
}

/**
 * The owner a presented token acts as, or null (unknown, revoked, or owner disabled).
 * `touch: false` checks without recording a use (an open stream re-checking its token).
 */
export async function validateApiToken(
  db: Database,
  token: string,
  now = new Date(),
  { touch = true }: { touch?: boolean } = {},
): Promise<SessionUser | null> {
  if (!token.startsWith(TOKEN_PREFIX)) return null;
  const [row] = await db
    .select({
      id: apiTokens.id,
      lastUsedAt: apiTokens.lastUsedAt,
      user: { id: users.id, name: users.name, role: users.role },
    })
    .from(apiTokens)
    .innerJoin(users, eq(users.id, apiTokens.userId))
    .where(
      and(
        eq(apiTokens.tokenHash, sha256Hex(token)),
        isNull(apiTokens.revokedAt),
        eq(users.disabled, false),
      ),
    );
  if (!row) return null;
  const stale =
    !row.lastUsedAt || now.getTime() - row.lastUsedAt.getTime() >= LAST_USED_RESOLUTION_MS;
  if (touch && stale) {
    await db
      .update(apiTokens)
      .set({ lastUsedAt: now })
      .where(
        and(
          eq(apiTokens.id, row.id),
          or(
            isNull(apiTokens.lastUsedAt),
            lt(apiTokens.lastUsedAt, new Date(now.getTime() - LAST_USED_RESOLUTION_MS)),
          ),
        ),
      );
  }
  return row.user;
}

/** Tokens of one user, or of everyone when `userId` is null (admins), newest first. */
export async function listApiTokens(
  db: Database,
  userId: string | null,
): Promise<ApiTokenSummary[]> {
  return db
    .select({
      id: apiTokens.id,
      userId: apiTokens.userId,
      userName: users.name,
      label: apiTokens.label,
      prefix: apiTokens.prefix,
      createdAt: apiTokens.createdAt,
      lastUsedAt: apiTokens.lastUsedAt,
      revokedAt: apiTokens.revokedAt,
    })
    .from(apiTokens)
    .innerJoin(users, eq(users.id, apiTokens.userId))
    .where(userId ? eq(apiTokens.userId, userId) : undefined)
    .orderBy(desc(apiTokens.createdAt));
}

/**
 * Revokes a token. `ownerId` limits it to that owner's tokens (a non-admin revoking their own);
 * null lets an admin revoke anyone's. Revoking twice is a no-op that still answers with the
 * token, so a retried click does not error.
 */
export async function revokeApiToken(
  db: Database,
  tokenId: string,
  ownerId: string | null,
): Promise<{ id: string; prefix: string; userName: string }> {
  const [token] = await db
    .select({ id: apiTokens.id, prefix: apiTokens.prefix, userName: users.name })
    .from(apiTokens)
    .innerJoin(users, eq(users.id, apiTokens.userId))
    .where(
      ownerId
        ? and(eq(apiTokens.id, tokenId), eq(apiTokens.userId, ownerId))
        : eq(apiTokens.id, tokenId),
    );
  if (!token) {
    throw new AppError("not_found", "That API token does not exist (or is not yours).");
  }
  const revoked = await db
    .update(apiTokens)
    .set({ revokedAt: new Date() })
    .where(and(eq(apiTokens.id, tokenId), isNull(apiTokens.revokedAt)))
    .returning({ userId: apiTokens.userId });
  for (const { userId } of revoked) await notifyAccessChanged(db, userId);
  if (revoked.length > 0) await notifyLive(db, { type: "list", list: "users" });
  return token;
}
