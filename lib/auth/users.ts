import { and, asc, eq, sql } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { notifyLive } from "@/lib/live/notify";
import { users } from "@/lib/db/schema";
import { AppError, isUniqueViolation } from "@/lib/errors";
import { hashPassword, verifyPassword } from "./password";
import type { Role } from "@/lib/roles";
import { notifyAccessChanged } from "./access-changed";
import { invalidateUserSessions } from "./session";

export type UserSummary = {
  id: string;
  name: string;
  role: Role;
  disabled: boolean;
  createdAt: Date;
  updatedAt: Date;
};

/** The columns of a user that may leave this module (never the password hash). */
export const userSummaryColumns = {
  id: users.id,
  name: users.name,
  role: users.role,
  disabled: users.disabled,
  createdAt: users.createdAt,
  updatedAt: users.updatedAt,
};

export async function listUsers(db: Database): Promise<UserSummary[]> {
  return db
    .select(userSummaryColumns)
    .from(users)
    .orderBy(asc(sql`lower(${users.name})`));
}

export async function findUserByName(db: Database, name: string) {
  const [row] = await db
    .select()
    .from(users)
    .where(eq(sql`lower(${users.name})`, name.toLowerCase()));
  return row ?? null;
}

export function nameTaken(name: string): AppError {
  return new AppError("conflict", `A user named "${name}" exists already. Pick another name.`, {
    name: ["This name is taken (names are case-insensitive)."],
  });
}

export async function createUser(
  db: Database,
  input: { name: string; role: Role; password: string },
): Promise<UserSummary> {
  const passwordHash = await hashPassword(input.password);
  try {
    const [row] = await db
      .insert(users)
      .values({ name: input.name, role: input.role, passwordHash })
      .returning(userSummaryColumns);
    await notifyUsersList(db);
    return row!;
  } catch (error) {
    if (isUniqueViolation(error)) throw nameTaken(input.name);
    throw error;
  }
}

/**
 * Changes a user's role or enabled state, refusing to leave the console without an enabled
 * admin (nobody could then manage users; only the CLI could repair it). The enabled admins are
 * locked first, so two admins demoting each other at once cannot both succeed.
 */
async function updateGuardingLastAdmin(
  db: Database,
  userId: string,
  change: { role?: Role; disabled?: boolean },
): Promise<UserSummary> {
  return db.transaction(async (tx) => {
    const admins = await tx
      .select({ id: users.id })
      .from(users)
      .where(and(eq(users.role, "admin"), eq(users.disabled, false)))
      .for("update");
    const [target] = await tx
      .select(userSummaryColumns)
      .from(users)
      .where(eq(users.id, userId))
      .for("update");
    if (!target) throw new AppError("not_found", "That user does not exist.");
    const staysEnabledAdmin =
      (change.role ?? target.role) === "admin" && !(change.disabled ?? target.disabled);
    const isOnlyEnabledAdmin = admins.length === 1 && admins[0]!.id === userId;
    if (isOnlyEnabledAdmin && !staysEnabledAdmin) {
      throw new AppError(
        "conflict",
        `${target.name} is the last enabled admin. Make another user an admin first, then try again.`,
      );
    }
    const [updated] = await tx
      .update(users)
      .set({ ...change, updatedAt: new Date() })
      .where(eq(users.id, userId))
      .returning(userSummaryColumns);
    await notifyUsersList(tx);
    return updated!;
  });
}

export async function changeUserRole(
  db: Database,
  userId: string,
  role: Role,
): Promise<UserSummary> {
  const user = await updateGuardingLastAdmin(db, userId, { role });
  await notifyAccessChanged(db, userId);
  return user;
}

export async function setUserDisabled(
  db: Database,
  userId: string,
  disabled: boolean,
): Promise<UserSummary> {
  const user = await updateGuardingLastAdmin(db, userId, { disabled });
  // A disabled user's sessions are refused anyway; deleting them makes it final.
  if (disabled) await invalidateUserSessions(db, userId);
  return user;
}

/** An admin sets a new password for someone: every session of theirs ends. */
export async function resetUserPassword(
  db: Database,
  userId: string,
  password: string,
): Promise<UserSummary> {
  const passwordHash = await hashPassword(password);
  const [user] = await db
    .update(users)
    .set({ passwordHash, updatedAt: new Date() })
    .where(eq(users.id, userId))
    .returning(userSummaryColumns);
  if (!user) throw new AppError("not_found", "That user does not exist.");
  await invalidateUserSessions(db, userId);
  return user;
}

/** A user changes their own password: the current one is required; other sessions end. */
export async function changeOwnPassword(
  db: Database,
  input: { userId: string; currentPassword: string; newPassword: string; keepToken?: string },
): Promise<void> {
  const [user] = await db.select().from(users).where(eq(users.id, input.userId));
  if (!user) throw new AppError("not_found", "Your account no longer exists.");
  if (!(await verifyPassword(user.passwordHash, input.currentPassword))) {
    throw new AppError("invalid_input", "The current password is not right.", {
      currentPassword: ["Not your current password."],
    });
  }
  await db
    .update(users)
    .set({ passwordHash: await hashPassword(input.newPassword), updatedAt: new Date() })
    .where(eq(users.id, input.userId));
  await invalidateUserSessions(db, input.userId, input.keepToken);
}

export async function countUsers(db: Pick<Database, "select">): Promise<number> {
  const [row] = await db.select({ n: sql<number>`count(*)::int` }).from(users);
  return row?.n ?? 0;
}

/** The users page (and the tokens on it) re-renders in every open tab, on commit. */
export function notifyUsersList(db: Pick<Database, "execute">): Promise<void> {
  return notifyLive(db, { type: "list", list: "users" });
}
