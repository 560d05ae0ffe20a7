import { json, readJson, respondError } from "@/lib/api/respond";
import { createUserAs } from "@/lib/auth/account-operations";
import { requestActor } from "@/lib/auth/actor";
import { ZCreateUser } from "@/lib/auth/schemas";
import { listUsers } from "@/lib/auth/users";
import { getDb } from "@/lib/db/client";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/** Admin: every user (no password hashes). */
export async function GET(request: Request): Promise<Response> {
  try {
    await requestActor(request, "admin");
    return json(await listUsers(getDb()));
  } catch (error) {
    return respondError(error, "GET /api/users");
  }
}

/** Admin: adds a user `{ name, role, password }`: 201 with the user; 409 for a taken name. */
export async function POST(request: Request): Promise<Response> {
  try {
    const actor = await requestActor(request, "admin");
    const input = ZCreateUser.parse(await readJson(request));
    return json(await createUserAs(getDb(), actor, input), 201);
  } catch (error) {
    return respondError(error, "POST /api/users");
  }
}
