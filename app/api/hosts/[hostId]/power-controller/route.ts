import { z } from "zod";

import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { ZHostId } from "@/lib/hosts/schemas";
import { hostPowerController } from "@/lib/power-controllers/read-state";
import { ZPowerControllerInput } from "@/lib/power-controllers/schemas";
import {
  auditedPowerControllerDeletion,
  auditedPowerControllerSet,
} from "@/lib/power-controllers/store";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

const params = { hostId: ZHostId };

const ZReadQuery = z.object({
  read: z
    .enum(["true", "false", "1", "0"], { error: "Use true or false." })
    .optional()
    .transform((value) => value === "true" || value === "1"),
});

/**
 * The host's out-of-band power controller (never its password): 200 `{ hostId, controller,
 * state }`, `controller` null without one. With `?read=true` the controller is asked now and
 * `state` is `{ state: "on" | "off" }` or `{ state: "unknown", problem, reason }` — "could not
 * ask" is never "off".
 */
export const GET = route(
  "GET /api/hosts/[hostId]/power-controller",
  {
    role: "viewer",
    summary: "A host's out-of-band power controller, and its power state when asked",
    params,
    query: { schema: ZReadQuery },
    errorKeys: "field",
  },
  async ({ params: { hostId }, query }) =>
    json(await hostPowerController(getDb(), hostId, { read: query.read })),
);

/**
 * Sets the host's power controller (replacing one it had): `{ kind: "redfish", address, port?,
 * username, password, systemId? }`, `{ kind: "ipmi", address, port?, username, password }` or
 * `{ kind: "wol", mac, broadcastAddress, port? }` (Redfish takes `auth: "basic" | "session"`), or
 * `{ kind: "pve-wol" }` (Wake-on-LAN through another member of its cluster; 400 for a host in no
 * cluster). A password left out keeps the stored one
 * of a controller of the same kind. The password is sealed and never answered. 200 the
 * controller; 400 with field errors; 409 for a retired host. Audited.
 */
export const PUT = route(
  "PUT /api/hosts/[hostId]/power-controller",
  {
    role: "admin",
    summary: "Set a host's out-of-band power controller (Redfish, IPMI or Wake-on-LAN)",
    params,
    body: { schema: ZPowerControllerInput, read: "json" },
    errorKeys: "field",
  },
  async ({ actor, params: { hostId }, body }) =>
    json(await auditedPowerControllerSet(getDb(), actor, { hostId, controller: body })),
);

/** Removes the host's power controller: 200 `{ hostId, deleted }`; 404 without one. Audited. */
export const DELETE = route(
  "DELETE /api/hosts/[hostId]/power-controller",
  { role: "admin", summary: "Remove a host's out-of-band power controller", params },
  async ({ actor, params: { hostId } }) =>
    json(await auditedPowerControllerDeletion(getDb(), actor, hostId)),
);
