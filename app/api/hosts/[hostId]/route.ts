import { requestActor } from "@/lib/auth/actor";
import { json, parseId, readJson, respondError } from "@/lib/api/respond";
import { audited } from "@/lib/audit/record-audit";
import { getDb } from "@/lib/db/client";
import { AppError } from "@/lib/errors";
import { auditedHostDeletion } from "@/lib/hosts/delete-host";
import { editHost, ZEditHost } from "@/lib/hosts/edit-host";
import { getHost } from "@/lib/hosts/get-host";
import { ZHostId } from "@/lib/hosts/schemas";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/** One host with its latest run: timeline, events and log tail. */
export async function GET(
  request: Request,
  { params }: { params: Promise<{ hostId: string }> },
): Promise<Response> {
  try {
    await requestActor(request, "viewer");
    const hostId = parseId(ZHostId, (await params).hostId, "hostId");
    const host = await getHost(getDb(), hostId);
    if (!host) throw new AppError("not_found", `Host ${hostId} does not exist.`);
    return json(host);
  } catch (error) {
    return respondError(error, "GET /api/hosts/[hostId]");
  }
}

/**
 * Edits where and how the console logs in (address, sshPort, sshUser, authMethod "keep" |
 * "console_key" | "password" | "private_key" with its secret). Saved only after a live SSH
 * test against the pin: 200 `{ hostId, changes, test, pinned }`; 400 with field errors (a
 * refused password is one); 409 for a changed host key, a running run or a retired host; 503
 * when nothing answers at the address. Nothing is saved on any error.
 */
export async function PATCH(
  request: Request,
  { params }: { params: Promise<{ hostId: string }> },
): Promise<Response> {
  try {
    const actor = await requestActor(request, "operator");
    const hostId = parseId(ZHostId, (await params).hostId, "hostId");
    const edit = ZEditHost.parse(await readJson(request));
    const db = getDb();
    const result = await audited(
      db,
      {
        actor,
        action: "host.edit",
        target: `host:${hostId}`,
        detail: {
          address: edit.address,
          sshPort: edit.sshPort,
          sshUser: edit.sshUser,
          credential: edit.authMethod,
        },
      },
      () => editHost(db, { hostId, actor: actor.name, edit }),
    );
    return json(result);
  } catch (error) {
    return respondError(error, "PATCH /api/hosts/[hostId]");
  }
}

/**
 * An admin deletes a retired host with its runs, logs and events (the audit log keeps a
 * `host.delete` entry naming it): 200 `{ hostId, name, … }`; 409 unless the host is retired.
 */
export async function DELETE(
  request: Request,
  { params }: { params: Promise<{ hostId: string }> },
): Promise<Response> {
  try {
    const actor = await requestActor(request, "admin");
    const hostId = parseId(ZHostId, (await params).hostId, "hostId");
    return json(await auditedHostDeletion(getDb(), actor, hostId));
  } catch (error) {
    return respondError(error, "DELETE /api/hosts/[hostId]");
  }
}
