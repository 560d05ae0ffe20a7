import "server-only";
import { eq } from "drizzle-orm";

import { audited, type AuditActor } from "@/lib/audit/record-audit";
import type { Database } from "@/lib/db/client";
import { events, hosts } from "@/lib/db/schema";
import { AppError } from "@/lib/errors";

import type { PowerController, PowerReading } from "./controller";
import { loadPowerController } from "./store";

/** What a power-on did, in the words the page shows: never "on" unless the controller reads it. */
export type PowerOnOutcome = {
  hostId: string;
  /** `already-on`: read On first, nothing sent. `sent`: the controller took the request. */
  result: "already-on" | "sent";
  /** Read back after the request (Redfish, IPMI); null for Wake-on-LAN, which cannot tell. */
  after: PowerReading | null;
  message: string;
};

/**
 * An operator's "Power on" of one host through its out-of-band controller. A machine the
 * controller reads On is left alone (nothing sent). Otherwise — Off, or a state the controller
 * could not tell — the request is sent: powering on is never destructive, and "could not ask"
 * must not stop the one action that brings a host back. Done is what the controller reads
 * afterwards, said as such: "took the request, reads On" or "took the request, still reads Off"
 * (a machine takes a while to start); a refused request is an error that says what to fix.
 */
export async function powerOnHost(
  db: Database,
  input: { hostId: string; actor: string },
): Promise<PowerOnOutcome> {
  const [host] = await db
    .select({ id: hosts.id, name: hosts.name, retiredAt: hosts.retiredAt })
    .from(hosts)
    .where(eq(hosts.id, input.hostId));
  if (!host) throw new AppError("not_found", `Host ${input.hostId} does not exist.`);
  if (host.retiredAt)
    throw new AppError("conflict", `${host.name} is retired: the console no longer powers it on.`);
  const loaded = await loadPowerController(db, host.id);
  if (!loaded) {
    throw new AppError(
      "conflict",
      `${host.name} has no power controller: set one on the host's page (Redfish, IPMI or Wake-on-LAN) first.`,
    );
  }
  const outcome = await powerOnThrough(
    loaded.controller,
    { name: host.name, api: "Proxmox API", page: "the host's page" },
    (message, data) =>
      db.insert(events).values({
        hostId: host.id,
        kind: "host.power_on",
        actor: input.actor,
        message,
        data,
      }),
  );
  return { hostId: host.id, ...outcome };
}

/**
 * The power-on itself, for a host or a backup server (`name`): read first (On: nothing sent),
 * sent otherwise, read back after; every outcome recorded through `record`.
 */
export async function powerOnThrough(
  controller: PowerController,
  machine: { name: string; api: string; page: string },
  recordEvent: (message: string, data: Record<string, unknown>) => Promise<unknown>,
): Promise<Omit<PowerOnOutcome, "hostId">> {
  const record = (message: string, data: Record<string, unknown>) =>
    recordEvent(message, { kind: controller.kind, ...data });
  const host = machine;

  const before =
    controller.kind === "wol" || controller.kind === "pve-wol"
      ? null
      : await controller.readPowerState();
  if (before?.state === "on") {
    const message = `${host.name} already reads On at its ${controller.where}: nothing was sent.`;
    await record(`power on of ${host.name}: already on (${controller.where}), nothing sent`, {
      result: "already-on",
    });
    return { result: "already-on", after: before, message };
  }

  const sent = await controller.powerOn();
  if (!sent.sent) {
    await record(`power on of ${host.name} failed: ${sent.reason}`, {
      result: "failed",
      problem: sent.problem,
    });
    throw new AppError(
      sent.problem === "unsupported" ? "conflict" : "unavailable",
      `${host.name} was not powered on: ${sent.reason}`,
    );
  }
  const after =
    controller.kind === "wol" || controller.kind === "pve-wol"
      ? null
      : await controller.readPowerState();
  const message =
    after === null
      ? `The magic packet for ${host.name} went out (${controller.where}). Wake-on-LAN cannot say whether it woke: ${machine.page} shows it once its API answers.`
      : after.state === "on"
        ? `${host.name}'s ${controller.where} took the request and reads On; its ${machine.api} answers once it has booted.`
        : after.state === "off"
          ? `${host.name}'s ${controller.where} took the request but still reads Off: a machine takes a while to start. Read its state again in a minute.`
          : `${host.name}'s ${controller.where} took the request; its state could not be read back (${after.reason}).`;
  await record(`power on of ${host.name}: ${sent.detail}`, {
    result: "sent",
    after: after?.state ?? null,
  });
  return { result: "sent", after, message };
}

/** powerOnHost under the audit log's `host.power_on`, with what the controller read after. */
export function auditedPowerOn(
  db: Database,
  actor: AuditActor,
  hostId: string,
): Promise<PowerOnOutcome> {
  return audited(
    db,
    {
      actor,
      action: "host.power_on",
      target: `host:${hostId}`,
      detail: (outcome: PowerOnOutcome) => ({
        result: outcome.result,
        after: outcome.after?.state ?? null,
      }),
    },
    () => powerOnHost(db, { hostId, actor: actor.name }),
  );
}
