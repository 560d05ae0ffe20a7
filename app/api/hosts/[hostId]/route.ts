import { respondForHost, type HostRouteContext } from "@/lib/api/host-route";
import { json, readJson } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { AppError } from "@/lib/errors";
import { auditedHostDeletion } from "@/lib/hosts/delete-host";
import { auditedHostEdit, ZEditHost } from "@/lib/hosts/edit-host";
import { getHost } from "@/lib/hosts/get-host";
import { pipelines } from "@/lib/registry/pipelines";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/** One host with its latest run: timeline, events and log tail. */
export async function GET(request: Request, context: HostRouteContext): Promise<Response> {
  return respondForHost(
    request,
    context,
    "viewer",
    "GET /api/hosts/[hostId]",
    async (_actor, hostId) => {
      const host = await getHost(getDb(), hostId, pipelines);
      if (!host) throw new AppError("not_found", `Host ${hostId} does not exist.`);
      return json(host);
    },
  );
}

/**
 * Edits where and how the console logs in (address, sshPort, sshUser, authMethod "keep" |
 * "console_key" | "password" | "private_key" with its secret). Saved only after a live SSH
 * test against the pin: 200 `{ hostId, changes, test, pinned }`; 400 with field errors (a
 * refused password is one); 409 for a changed host key, a running run or a retired host; 503
 * when nothing answers at the address. Nothing is saved on any error.
 */
export async function PATCH(request: Request, context: HostRouteContext): Promise<Response> {
  return respondForHost(
    request,
    context,
    "operator",
    "PATCH /api/hosts/[hostId]",
    async (actor, hostId) => {
      const edit = ZEditHost.parse(await readJson(request));
      return json(await auditedHostEdit(getDb(), actor, { hostId, edit }));
    },
  );
}

/**
 * An admin deletes a retired host with its runs, logs and events (the audit log keeps a
 * `host.delete` entry naming it): 200 `{ hostId, name, … }`; 409 unless the host is retired.
 */
export async function DELETE(request: Request, context: HostRouteContext): Promise<Response> {
  return respondForHost(
    request,
    context,
    "admin",
    "DELETE /api/hosts/[hostId]",
    async (actor, hostId) => json(await auditedHostDeletion(getDb(), actor, hostId)),
  );
}
