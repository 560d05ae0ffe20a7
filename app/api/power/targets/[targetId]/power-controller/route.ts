import { z } from "zod";

import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { ZPowerControllerInput } from "@/lib/power-controllers/schemas";
import {
  auditedTargetPowerControllerDeletion,
  auditedTargetPowerControllerSet,
  targetPowerController,
} from "@/lib/power-controllers/target-controller";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

const params = { targetId: z.uuid({ error: "Not a target id." }) };

const ZReadQuery = z.object({
  read: z
    .enum(["true", "false", "1", "0"], { error: "Use true or false." })
    .optional()
    .transform((value) => value === "true" || value === "1"),
});

/**
 * A backup server's out-of-band power controller (never its password): 200 `{ targetId,
 * controller, state }`, `controller` null without one. With `?read=true` the controller is
 * asked now: `state` is `{ state: "on" | "off" }` or `{ state: "unknown", problem, reason }`.
 * 409 for a target that is a Proxmox VE node (its controller is its host's).
 */
export const GET = route(
  "GET /api/power/targets/[targetId]/power-controller",
  {
    role: "viewer",
    summary: "A backup server's out-of-band power controller, and its power state when asked",
    params,
    query: { schema: ZReadQuery },
    errorKeys: "field",
  },
  async ({ params: { targetId }, query }) =>
    json(await targetPowerController(getDb(), targetId, { read: query.read })),
);

/**
 * Sets a backup server's power controller: the host's input (Redfish, IPMI or Wake-on-LAN);
 * `{ kind: "pve-wol" }` is a field error — a PBS is in no Proxmox VE cluster. A password left
 * out keeps the stored one of a controller of the same kind; sealed, never answered. 200 the
 * controller; 400 with field errors; 409 for a pve-node target. Audited.
 */
export const PUT = route(
  "PUT /api/power/targets/[targetId]/power-controller",
  {
    role: "admin",
    summary: "Set a backup server's out-of-band power controller (Redfish, IPMI or Wake-on-LAN)",
    params,
    body: { schema: ZPowerControllerInput, read: "json" },
    errorKeys: "field",
  },
  async ({ actor, params: { targetId }, body }) =>
    json(await auditedTargetPowerControllerSet(getDb(), actor, { targetId, controller: body })),
);

/** Removes a backup server's power controller: 200 `{ targetId, deleted }`; 404 without one. Audited. */
export const DELETE = route(
  "DELETE /api/power/targets/[targetId]/power-controller",
  { role: "admin", summary: "Remove a backup server's out-of-band power controller", params },
  async ({ actor, params: { targetId } }) =>
    json(await auditedTargetPowerControllerDeletion(getDb(), actor, targetId)),
);
