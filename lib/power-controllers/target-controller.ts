import "server-only";
import { eq } from "drizzle-orm";

import { audited, type AuditActor } from "@/lib/audit/record-audit";
import type { Database, Transaction } from "@/lib/db/client";
import { events, powerControllers, powerTargets } from "@/lib/db/schema";
import { AppError } from "@/lib/errors";

import type { PowerReading } from "./controller";
import { powerOnThrough, type PowerOnOutcome } from "./power-on-host";
import type { PowerControllerView, TPowerControllerInput } from "./schemas";
import {
  controllerView,
  describe,
  getTargetPowerControllerView,
  loadTargetPowerController,
  PBS_NO_PVE_WOL,
  storedValues,
} from "./store";

/**
 * A Proxmox Backup Server's power controller (issue 30, item 1: "a host — onboarded host or
 * backup server — may carry a power controller"). A PBS is a power target of kind `pbs` with no
 * host row, so its controller hangs on the target. Same input, same sealing, same controllers as
 * a host's (store.ts); only Wake-on-LAN through a cluster member is refused: a PBS is in no
 * Proxmox VE cluster.
 */

type Owner = { id: string; name: string };

/** The backup server's target row, locked for the change; anything else is an error that says so. */
async function lockPbsTarget(tx: Transaction | Database, targetId: string): Promise<Owner> {
  const [target] = await tx
    .select({ id: powerTargets.id, kind: powerTargets.kind, name: powerTargets.name })
    .from(powerTargets)
    .where(eq(powerTargets.id, targetId))
    .for("update");
  if (!target) throw new AppError("not_found", `Power target ${targetId} does not exist.`);
  if (target.kind !== "pbs" || target.name === null) {
    throw new AppError(
      "conflict",
      "This target is a Proxmox VE host: its power controller is set on the host's page.",
    );
  }
  return { id: target.id, name: target.name };
}

async function readPbsTarget(db: Pick<Database, "select">, targetId: string): Promise<Owner> {
  const [target] = await db
    .select({ id: powerTargets.id, kind: powerTargets.kind, name: powerTargets.name })
    .from(powerTargets)
    .where(eq(powerTargets.id, targetId));
  if (!target) throw new AppError("not_found", `Power target ${targetId} does not exist.`);
  if (target.kind !== "pbs" || target.name === null) {
    throw new AppError(
      "conflict",
      "This target is a Proxmox VE host: its power controller is on the host's page.",
    );
  }
  return { id: target.id, name: target.name };
}

/** Sets (creates or replaces) a backup server's controller; see setPowerController for a host's. */
export async function setTargetPowerController(
  db: Database,
  input: { targetId: string; actor: string; controller: TPowerControllerInput },
): Promise<PowerControllerView> {
  const { controller } = input;
  if (controller.kind === "pve-wol") {
    throw new AppError("invalid_input", PBS_NO_PVE_WOL, { kind: [PBS_NO_PVE_WOL] });
  }
  return db.transaction(async (tx) => {
    const target = await lockPbsTarget(tx, input.targetId);
    const [existing] = await tx
      .select()
      .from(powerControllers)
      .where(eq(powerControllers.targetId, target.id));
    const values = { hostId: null, targetId: target.id, ...storedValues(controller, existing) };
    const [row] = await tx
      .insert(powerControllers)
      .values(values)
      .onConflictDoUpdate({ target: powerControllers.targetId, set: values })
      .returning();
    const view = controllerView(row!);
    await tx.insert(events).values({
      kind: "power.target_controller_set",
      actor: input.actor,
      message: `power controller of backup server ${target.name} set: ${describe(view)}`,
      data: { targetId: target.id, kind: view.kind },
    });
    return view;
  });
}

export async function deleteTargetPowerController(
  db: Database,
  input: { targetId: string; actor: string },
): Promise<{ targetId: string; deleted: PowerControllerView["kind"] }> {
  return db.transaction(async (tx) => {
    const target = await lockPbsTarget(tx, input.targetId);
    const [row] = await tx
      .delete(powerControllers)
      .where(eq(powerControllers.targetId, target.id))
      .returning();
    if (!row) throw new AppError("not_found", `${target.name} has no power controller.`);
    await tx.insert(events).values({
      kind: "power.target_controller_deleted",
      actor: input.actor,
      message: `power controller of backup server ${target.name} removed (${describe(controllerView(row))})`,
      data: { targetId: target.id, kind: row.kind },
    });
    return { targetId: target.id, deleted: row.kind };
  });
}

export type TargetPowerController = {
  targetId: string;
  controller: PowerControllerView | null;
  /** Asked now, when asked for; null without a controller or when not asked. */
  state: PowerReading | null;
};

/** A backup server's controller as the API and the page show it, its state asked now if `read`. */
export async function targetPowerController(
  db: Database,
  targetId: string,
  options: { read: boolean; timeoutMs?: number },
): Promise<TargetPowerController> {
  const target = await readPbsTarget(db, targetId);
  if (!options.read) {
    return {
      targetId,
      controller: await getTargetPowerControllerView(db, target.id),
      state: null,
    };
  }
  const loaded = await loadTargetPowerController(db, target.id, {
    timeoutMs: options.timeoutMs ?? 5000,
  });
  if (!loaded) return { targetId, controller: null, state: null };
  const state = await loaded.controller.readPowerState();
  // A first contact may just have pinned the certificate: show the view as it is now.
  return { targetId, controller: await getTargetPowerControllerView(db, target.id), state };
}

export type TargetPowerOnOutcome = Omit<PowerOnOutcome, "hostId"> & { targetId: string };

/**
 * "Power on" of a backup server through its controller: as a host's (powerOnThrough) — read
 * On first means nothing is sent; done is what the controller reads afterwards.
 */
export async function powerOnTarget(
  db: Database,
  input: { targetId: string; actor: string },
): Promise<TargetPowerOnOutcome> {
  const target = await readPbsTarget(db, input.targetId);
  const loaded = await loadTargetPowerController(db, target.id);
  if (!loaded) {
    throw new AppError(
      "conflict",
      `${target.name} has no power controller: set one on /power/targets (Redfish, IPMI or Wake-on-LAN) first.`,
    );
  }
  const outcome = await powerOnThrough(
    loaded.controller,
    { name: target.name, api: "backup server's API", page: "/power/targets" },
    (message, data) =>
      db.insert(events).values({
        kind: "power.target_power_on",
        actor: input.actor,
        message,
        data: { targetId: target.id, ...data },
      }),
  );
  return { targetId: target.id, ...outcome };
}

export function auditedTargetPowerControllerSet(
  db: Database,
  actor: AuditActor,
  input: { targetId: string; controller: TPowerControllerInput },
): Promise<PowerControllerView> {
  const { password: _password, ...shown } = { password: undefined, ...input.controller };
  return audited(
    db,
    {
      actor,
      action: "power.target_controller_set",
      target: `power-target:${input.targetId}`,
      detail: {
        ...shown,
        passwordChanged: "password" in input.controller && input.controller.password !== undefined,
      },
    },
    () => setTargetPowerController(db, { ...input, actor: actor.name }),
  );
}

export function auditedTargetPowerControllerDeletion(
  db: Database,
  actor: AuditActor,
  targetId: string,
): Promise<{ targetId: string; deleted: PowerControllerView["kind"] }> {
  return audited(
    db,
    {
      actor,
      action: "power.target_controller_delete",
      target: `power-target:${targetId}`,
    },
    () => deleteTargetPowerController(db, { targetId, actor: actor.name }),
  );
}

export function auditedTargetPowerOn(
  db: Database,
  actor: AuditActor,
  targetId: string,
): Promise<TargetPowerOnOutcome> {
  return audited(
    db,
    {
      actor,
      action: "power.target_power_on",
      target: `power-target:${targetId}`,
      detail: (outcome: TargetPowerOnOutcome) => ({
        result: outcome.result,
        after: outcome.after?.state ?? null,
      }),
    },
    () => powerOnTarget(db, { targetId, actor: actor.name }),
  );
}
