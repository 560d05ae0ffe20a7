import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { createUserAs } from "@/lib/auth/account-operations";
import { ZCreateUser } from "@/lib/auth/schemas";
import { listUsers } from "@/lib/auth/users";
import { getDb } from "@/lib/db/client";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/** Admin: every user (no password hashes). */
export const GET = route("GET /api/users", { role: "admin", summary: "Every user" }, async () =>
  json(await listUsers(getDb())),
);

/** Admin: adds a user `{ name, role, password }`: 201 with the user; 409 for a taken name. */
export const POST = route(
  "POST /api/users",
  {
    role: "admin",
    summary: "Add a user",
    body: { schema: ZCreateUser, read: "json" },
    errorKeys: "field",
  },
  async ({ actor, body }) => json(await createUserAs(getDb(), actor, body), 201),
);
