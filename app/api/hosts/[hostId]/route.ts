import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { AppError } from "@/lib/errors";
import { auditedHostDeletion } from "@/lib/hosts/delete-host";
import { auditedHostEdit, ZEditHost } from "@/lib/hosts/edit-host";
import { getHost } from "@/lib/hosts/get-host";
import { ZHostId } from "@/lib/hosts/schemas";
import { pipelines } from "@/lib/registry/pipelines";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

const params = { hostId: ZHostId };

/** One host with its latest run: timeline, events and log tail. */
export const GET = route(
  "GET /api/hosts/[hostId]",
  { role: "viewer", summary: "One host with its latest run", params },
  async ({ params: { hostId } }) => {
    const host = await getHost(getDb(), hostId, pipelines);
    if (!host) throw new AppError("not_found", `Host ${hostId} does not exist.`);
    return json(host);
  },
);

/**
 * Edits where and how the console logs in (address, sshPort, sshUser, authMethod "keep" |
 * "console_key" | "password" | "private_key" with its secret) and, optionally, a new Proxmox VE
 * subscription key (`subscriptionKey`, sealed; never answered back). Saved only after a live SSH
 * test against the pin: 200 `{ hostId, changes, test, pinned }`; 400 with field errors (a
 * refused password is one); 409 for a changed host key, a running run or a retired host; 503
 * when nothing answers at the address. Nothing is saved on any error.
 */
export const PATCH = route(
  "PATCH /api/hosts/[hostId]",
  {
    role: "operator",
    summary: "Change how the console logs in to a host (tested live before saving)",
    params,
    body: { schema: ZEditHost, read: "json" },
    errorKeys: "field",
  },
  async ({ actor, params: { hostId }, body: edit }) =>
    json(await auditedHostEdit(getDb(), actor, { hostId, edit })),
);

/**
 * An admin deletes a retired host with its runs, logs and events (the audit log keeps a
 * `host.delete` entry naming it): 200 `{ hostId, name, … }`; 409 unless the host is retired.
 */
export const DELETE = route(
  "DELETE /api/hosts/[hostId]",
  { role: "admin", summary: "Delete a retired host with its history", params },
  async ({ actor, params: { hostId } }) => json(await auditedHostDeletion(getDb(), actor, hostId)),
);
