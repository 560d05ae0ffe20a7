import { audited } from "@/lib/audit/record-audit";
import type { Database } from "@/lib/db/client";
import { AppError } from "@/lib/errors";
import type { Actor } from "./actor";
import { createApiToken, revokeApiToken } from "./api-tokens";
import type { Role } from "@/lib/roles";
import { invalidateUserSessions } from "./session";
import {
  changeOwnPassword,
  changeUserRole,
  createUser,
  resetUserPassword,
  setUserDisabled,
  type UserSummary,
} from "./users";

/*
 * User and token management as the server actions and the JSON API both run it: the role
 * checks that depend on the target (whose token) and the audit row, in one place per operation.
 * The caller has checked the actor's role for the door (admin for user management).
 */

/** Who an audit row names; the CLI acts as `cli`. */
export type Acting = Pick<Actor, "userId" | "name"> & { role: Role | "cli" };

export function createUserAs(
  db: Database,
  actor: Acting,
  input: { name: string; role: Role; password: string },
): Promise<UserSummary> {
  return audited(
    db,
    { actor, action: "user.create", target: `user:${input.name}`, detail: { role: input.role } },
    () => createUser(db, input),
  );
}

export function changeUserRoleAs(
  db: Database,
  actor: Acting,
  input: { userId: string; role: Role },
): Promise<UserSummary> {
  return audited(
    db,
    {
      actor,
      action: "user.role_change",
      target: (user: UserSummary) => `user:${user.name}`,
      detail: { userId: input.userId, role: input.role },
    },
    () => changeUserRole(db, input.userId, input.role),
  );
}

export function setUserDisabledAs(
  db: Database,
  actor: Acting,
  input: { userId: string; disabled: boolean },
): Promise<UserSummary> {
  if (input.disabled && input.userId === actor.userId) {
    // Not the last-admin rule: disabling yourself signs you out mid-click, never what was meant.
    throw new AppError("conflict", "You cannot disable your own account. Ask another admin.");
  }
  return audited(
    db,
    {
      actor,
      action: input.disabled ? "user.disable" : "user.enable",
      target: (user: UserSummary) => `user:${user.name}`,
      detail: { userId: input.userId },
    },
    () => setUserDisabled(db, input.userId, input.disabled),
  );
}

export function resetUserPasswordAs(
  db: Database,
  actor: Acting,
  input: { userId: string; password: string },
): Promise<UserSummary> {
  return audited(
    db,
    {
      actor,
      action: "user.password_change",
      target: (user: UserSummary) => `user:${user.name}`,
      detail: { userId: input.userId, how: "reset by admin" },
    },
    () => resetUserPassword(db, input.userId, input.password),
  );
}

/**
 * The JSON API's change of a user (`PATCH /api/users/:userId`): each part is its own audited
 * operation, applied in this order — role, disabled, password. Answers the user as the last one
 * left it.
 */
export async function updateUserAs(
  db: Database,
  actor: Acting,
  userId: string,
  change: { role?: Role; disabled?: boolean; password?: string },
): Promise<UserSummary | undefined> {
  let user: UserSummary | undefined;
  if (change.role) user = await changeUserRoleAs(db, actor, { userId, role: change.role });
  if (change.disabled !== undefined) {
    user = await setUserDisabledAs(db, actor, { userId, disabled: change.disabled });
  }
  if (change.password)
    user = await resetUserPasswordAs(db, actor, { userId, password: change.password });
  return user;
}

export function changeOwnPasswordAs(
  db: Database,
  actor: Actor & { userId: string },
  input: { currentPassword: string; newPassword: string; keepToken?: string },
): Promise<void> {
  return audited(
    db,
    {
      actor,
      action: "user.password_change",
      target: `user:${actor.name}`,
      detail: { how: "own" },
    },
    () => changeOwnPassword(db, { userId: actor.userId, ...input }),
  );
}

/** Ends every session of the actor but the one asking ("sign out everywhere else"). */
export function signOutOtherSessionsAs(
  db: Database,
  actor: Actor & { userId: string },
  keepToken: string,
): Promise<number> {
  return audited(
    db,
    {
      actor,
      action: "auth.sign_out_others",
      target: `user:${actor.name}`,
      detail: (ended: number) => ({ ended }),
    },
    () => invalidateUserSessions(db, actor.userId, keepToken),
  );
}

export function createApiTokenAs(
  db: Database,
  actor: Acting,
  owner: { id: string; name: string },
  label: string,
): Promise<{ id: string; token: string; prefix: string }> {
  return audited(
    db,
    {
      actor,
      action: "token.create",
      target: (created: { prefix: string }) => `token:${created.prefix}`,
      detail: { owner: owner.name, label },
    },
    () => createApiToken(db, owner.id, label),
  );
}

/** Revokes a token: anyone their own, an admin anyone's. */
export function revokeApiTokenAs(
  db: Database,
  actor: Actor,
  tokenId: string,
): Promise<{ id: string; prefix: string; userName: string }> {
  const ownerId = actor.role === "admin" ? null : actor.userId;
  if (actor.role !== "admin" && !ownerId) {
    throw new AppError("forbidden", "Only a signed-in user can revoke their tokens.");
  }
  return audited(
    db,
    {
      actor,
      action: "token.revoke",
      target: (token: { prefix: string }) => `token:${token.prefix}`,
      detail: { tokenId },
    },
    () => revokeApiToken(db, tokenId, ownerId),
  );
}

/** The signed-in user's id, for operations on "my" account (a token-less actor has none). */
export function ownUserId(actor: Actor): string {
  if (!actor.userId) throw new AppError("unauthenticated", "Sign in to manage your account.");
  return actor.userId;
}
