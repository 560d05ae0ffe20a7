import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { updateUserAs } from "@/lib/auth/account-operations";
import { ZUpdateUser, ZUserId } from "@/lib/auth/schemas";
import { getDb } from "@/lib/db/client";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Admin: changes a user: `{ role?, disabled?, password? }` (password = a reset; their sessions
 * end). Each change is its own audited operation, applied in that order; 200 with the user.
 */
export const PATCH = route(
  "PATCH /api/users/[userId]",
  {
    role: "admin",
    summary: "Change a user's role, disable or enable them, or reset their password",
    params: { userId: ZUserId },
    body: { schema: ZUpdateUser, read: "json" },
    errorKeys: "field",
  },
  async ({ actor, params: { userId }, body }) =>
    json(await updateUserAs(getDb(), actor, userId, body)),
);
