import { json, parseId, readJson, respondError } from "@/lib/api/respond";
import {
  changeUserRoleAs,
  resetUserPasswordAs,
  setUserDisabledAs,
} from "@/lib/auth/account-operations";
import { requestActor } from "@/lib/auth/actor";
import { ZUpdateUser, ZUserId } from "@/lib/auth/schemas";
import type { UserSummary } from "@/lib/auth/users";
import { getDb } from "@/lib/db/client";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Admin: changes a user: `{ role?, disabled?, password? }` (password = a reset; their sessions
 * end). Each change is its own audited operation, applied in that order; 200 with the user.
 */
export async function PATCH(
  request: Request,
  { params }: { params: Promise<{ userId: string }> },
): Promise<Response> {
  try {
    const actor = await requestActor(request, "admin");
    const userId = parseId(ZUserId, (await params).userId, "userId");
    const change = ZUpdateUser.parse(await readJson(request));
    const db = getDb();
    let user: UserSummary | undefined;
    if (change.role) user = await changeUserRoleAs(db, actor, { userId, role: change.role });
    if (change.disabled !== undefined) {
      user = await setUserDisabledAs(db, actor, { userId, disabled: change.disabled });
    }
    if (change.password) {
      user = await resetUserPasswordAs(db, actor, { userId, password: change.password });
    }
    return json(user);
  } catch (error) {
    return respondError(error, "PATCH /api/users/[userId]");
  }
}
