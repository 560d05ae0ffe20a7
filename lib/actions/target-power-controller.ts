"use server";

import { z } from "zod";
import { getDb } from "@/lib/db/client";
import { ZPowerControllerInput } from "@/lib/power-controllers/schemas";
import {
  auditedTargetPowerControllerDeletion,
  auditedTargetPowerControllerSet,
  targetPowerController,
} from "@/lib/power-controllers/target-controller";
import { powerOnProtectedPbs } from "@/lib/power/operations/power-on-protected-host";
import { action } from "./action";

/**
 * A backup server's power controller on /power/targets (the same panel as a host's): an admin
 * sets or removes it (audited, the password sealed and never sent back); a viewer may ask its
 * power state; an operator powers it on, confirmed in a dialog.
 */
const ZTargetId = z.uuid({ error: "Not a target id." });

export const setTargetPowerControllerAction = action(
  {
    name: "set backup server power controller",
    role: "admin",
    schema: z.object({ targetId: ZTargetId }).and(ZPowerControllerInput),
    revalidate: [["/power/targets", "page"]],
  },
  async ({ actor, input: { targetId, ...controller } }) => ({
    controller: await auditedTargetPowerControllerSet(getDb(), actor, { targetId, controller }),
  }),
);

export const deleteTargetPowerControllerAction = action(
  {
    name: "remove backup server power controller",
    role: "admin",
    schema: z.object({ targetId: ZTargetId }),
    revalidate: [["/power/targets", "page"]],
  },
  async ({ actor, input: { targetId } }) =>
    auditedTargetPowerControllerDeletion(getDb(), actor, targetId),
);

export const readTargetPowerStateAction = action(
  {
    name: "read backup server power state",
    role: "viewer",
    schema: z.object({ targetId: ZTargetId }),
  },
  async ({ input: { targetId } }) => targetPowerController(getDb(), targetId, { read: true }),
);

/** "Power on" of a backup server: an operator's, confirmed, audited as `power.target_power_on`. */
export const powerOnTargetAction = action(
  { name: "power on backup server", role: "operator", schema: z.object({ targetId: ZTargetId }) },
  async ({ actor, input: { targetId } }) => ({
    outcome: await powerOnProtectedPbs(getDb(), actor, targetId),
  }),
);
