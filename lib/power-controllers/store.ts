import "server-only";
import { and, eq, isNull } from "drizzle-orm";

import { audited, type AuditActor } from "@/lib/audit/record-audit";
import type { Database } from "@/lib/db/client";
import { events, hosts, powerControllers } from "@/lib/db/schema";
import { AppError } from "@/lib/errors";
import { lockHost, retiredHostError } from "@/lib/host-access/host-guards";
import { seal, unseal } from "@/lib/secrets/seal";

import { clusterNameOfHost, otherClusterMembers } from "./cluster-members";
import type { PowerController } from "./controller";
import { pveWolController } from "./pve-wol";
import { ipmiController } from "./ipmi";
import { redfishController } from "./redfish";
import type { PowerControllerView, TPowerControllerInput } from "./schemas";
import { wolController } from "./wol";

type Reader = Pick<Database, "select">;

/** Why a backup server cannot be woken through a cluster member: it is in no Proxmox cluster. */
export const PBS_NO_PVE_WOL =
  "A Proxmox Backup Server is in no Proxmox VE cluster: no member can wake it. Use its BMC (Redfish or IPMI) or Wake-on-LAN with a broadcast address.";
type Row = typeof powerControllers.$inferSelect;

/** What the browser and the API may see of a stored controller: everything but the secret. */
export function controllerView(row: Row): PowerControllerView {
  return {
    hostId: row.hostId,
    targetId: row.targetId,
    kind: row.kind,
    address: row.address,
    port: row.port,
    username: row.username,
    systemId: row.systemId,
    redfishAuth: row.redfishAuth,
    mac: row.mac,
    broadcastAddress: row.broadcastAddress,
    certSha256: row.certSha256,
    hasPassword: row.kind === "redfish" || row.kind === "ipmi",
    updatedAt: row.updatedAt.toISOString(),
  };
}

export async function getPowerControllerView(
  db: Reader,
  hostId: string,
): Promise<PowerControllerView | null> {
  const [row] = await db.select().from(powerControllers).where(eq(powerControllers.hostId, hostId));
  return row ? controllerView(row) : null;
}

/** A backup server's controller (its power target of kind `pbs`), everything but the secret. */
export async function getTargetPowerControllerView(
  db: Reader,
  targetId: string,
): Promise<PowerControllerView | null> {
  const [row] = await db
    .select()
    .from(powerControllers)
    .where(eq(powerControllers.targetId, targetId));
  return row ? controllerView(row) : null;
}

/** A backup server's controller, ready to ask, or null without one (see loadPowerController). */
export async function loadTargetPowerController(
  db: Database,
  targetId: string,
  options: { timeoutMs?: number } = {},
): Promise<{ view: PowerControllerView; controller: PowerController } | null> {
  const [row] = await db
    .select()
    .from(powerControllers)
    .where(eq(powerControllers.targetId, targetId));
  if (!row) return null;
  return { view: controllerView(row), controller: await controllerOf(db, row, options.timeoutMs) };
}

/**
 * The host's controller, ready to ask, or null without one. A Redfish controller without a
 * pin stores the certificate of its first contact (only if still unpinned: two first contacts
 * at once keep the first).
 */
export async function loadPowerController(
  db: Database,
  hostId: string,
  options: { timeoutMs?: number } = {},
): Promise<{ view: PowerControllerView; controller: PowerController } | null> {
  const [row] = await db.select().from(powerControllers).where(eq(powerControllers.hostId, hostId));
  if (!row) return null;
  return { view: controllerView(row), controller: await controllerOf(db, row, options.timeoutMs) };
}

async function controllerOf(db: Database, row: Row, timeoutMs = 10_000): Promise<PowerController> {
  if (row.kind === "pve-wol") {
    // Refused for a backup server when set (it is in no Proxmox cluster); a row that says
    // otherwise is not asked of anyone.
    if (!row.hostId) throw new AppError("conflict", PBS_NO_PVE_WOL);
    const hostId = row.hostId;
    const [host] = await db
      .select({ nodeName: hosts.nodeName, name: hosts.name })
      .from(hosts)
      .where(eq(hosts.id, hostId));
    return pveWolController({
      // Proxmox names the node in every /nodes/{node} path; a host not yet onboarded has none.
      node: host?.nodeName ?? host?.name ?? hostId,
      members: () => otherClusterMembers(db, hostId, { timeoutMs }),
    });
  }
  const secret = JSON.parse(unseal(row.sealedSecret)) as { password?: string };
  if (row.kind === "redfish") {
    return redfishController({
      address: row.address!,
      port: row.port,
      username: row.username!,
      password: secret.password ?? "",
      systemId: row.systemId!,
      auth: row.redfishAuth ?? "basic",
      certSha256: row.certSha256,
      timeoutMs,
      onFirstContact: async (certSha256) => {
        await db
          .update(powerControllers)
          .set({ certSha256, certPinnedAt: new Date() })
          .where(and(eq(powerControllers.id, row.id), isNull(powerControllers.certSha256)));
      },
    });
  }
  if (row.kind === "ipmi") {
    return ipmiController({
      address: row.address!,
      port: row.port,
      username: row.username!,
      password: secret.password ?? "",
      answerSeconds: Math.max(1, Math.round(timeoutMs / 3000)),
    });
  }
  return wolController({ mac: row.mac!, broadcastAddress: row.broadcastAddress!, port: row.port });
}

/**
 * Sets (creates or replaces) the host's controller. A password left out keeps the stored one —
 * only for a controller of the same kind. A new address or port forgets the Redfish pin: the
 * next contact pins what answers there.
 */
export async function setPowerController(
  db: Database,
  input: { hostId: string; actor: string; controller: TPowerControllerInput },
): Promise<PowerControllerView> {
  const { controller } = input;
  return db.transaction(async (tx) => {
    const host = await lockHost(tx, input.hostId);
    if (host.retiredAt) throw retiredHostError(host.name);
    const [existing] = await tx
      .select()
      .from(powerControllers)
      .where(eq(powerControllers.hostId, host.id));
    if (controller.kind === "pve-wol") {
      // Only a member has another member to send the packet; a standalone host uses plain WoL.
      const cluster = await clusterNameOfHost(tx, host.id);
      if (!host.nodeName || cluster === null) {
        const why = !host.nodeName
          ? `${host.name} has no Proxmox node name yet: finish its onboarding first.`
          : `${host.name} is not a member of a Proxmox cluster the console knows: Wake-on-LAN through a cluster member needs one. Use Wake-on-LAN with a broadcast address, or a BMC.`;
        throw new AppError("invalid_input", why, { kind: [why] });
      }
    }
    const values = { hostId: host.id, targetId: null, ...storedValues(controller, existing) };
    const [row] = await tx
      .insert(powerControllers)
      .values(values)
      .onConflictDoUpdate({ target: powerControllers.hostId, set: values })
      .returning();
    const view = controllerView(row!);
    await tx.insert(events).values({
      hostId: host.id,
      kind: "host.power_controller_set",
      actor: input.actor,
      message: `power controller of ${host.name} set: ${describe(view)}`,
      data: { kind: view.kind },
    });
    return view;
  });
}

/** The row's values for `controller`, the secret sealed (or kept, see setPowerController). */
export function storedValues(controller: TPowerControllerInput, existing: Row | undefined) {
  let sealedSecret: string;
  if (controller.kind === "wol" || controller.kind === "pve-wol") sealedSecret = seal("{}");
  else if (controller.password !== undefined)
    sealedSecret = seal(JSON.stringify({ password: controller.password }));
  else if (existing && existing.kind === controller.kind) sealedSecret = existing.sealedSecret;
  else
    throw new AppError("invalid_input", "Enter the BMC password.", {
      password: ["Enter the BMC password."],
    });
  const sameEndpoint =
    existing?.kind === "redfish" &&
    controller.kind === "redfish" &&
    existing.address === controller.address &&
    existing.port === controller.port;
  const bmc = controller.kind === "redfish" || controller.kind === "ipmi" ? controller : null;
  return {
    kind: controller.kind,
    address: bmc?.address ?? null,
    // pve-wol: Proxmox sends to the "discard" service, UDP 9; the port is not its to choose.
    port: controller.kind === "pve-wol" ? 9 : controller.port,
    username: bmc?.username ?? null,
    systemId: controller.kind === "redfish" ? controller.systemId : null,
    redfishAuth: controller.kind === "redfish" ? controller.auth : null,
    mac: controller.kind === "wol" ? controller.mac : null,
    broadcastAddress: controller.kind === "wol" ? controller.broadcastAddress : null,
    certSha256: sameEndpoint ? existing.certSha256 : null,
    certPinnedAt: sameEndpoint ? existing.certPinnedAt : null,
    sealedSecret,
    updatedAt: new Date(),
  };
}

export async function deletePowerController(
  db: Database,
  input: { hostId: string; actor: string },
): Promise<{ hostId: string; deleted: PowerControllerView["kind"] }> {
  return db.transaction(async (tx) => {
    const host = await lockHost(tx, input.hostId);
    const [row] = await tx
      .delete(powerControllers)
      .where(eq(powerControllers.hostId, host.id))
      .returning();
    if (!row) throw new AppError("not_found", `${host.name} has no power controller.`);
    await tx.insert(events).values({
      hostId: host.id,
      kind: "host.power_controller_deleted",
      actor: input.actor,
      message: `power controller of ${host.name} removed (${describe(controllerView(row))})`,
      data: { kind: row.kind },
    });
    return { hostId: host.id, deleted: row.kind };
  });
}

export function describe(view: PowerControllerView): string {
  if (view.kind === "wol")
    return `Wake-on-LAN to ${view.mac} via ${view.broadcastAddress}:${view.port}`;
  if (view.kind === "pve-wol") return "Wake-on-LAN through a member of its Proxmox cluster";
  const kind = view.kind === "redfish" ? "Redfish" : "IPMI";
  return `${kind} at ${view.address}:${view.port} as ${view.username}${view.kind === "redfish" ? `, system ${view.systemId}${view.redfishAuth === "session" ? ", Redfish session" : ""}` : ""}`;
}

/** setPowerController under the audit log's `host.power_controller_set` (no secret in it). */
export function auditedPowerControllerSet(
  db: Database,
  actor: AuditActor,
  input: { hostId: string; controller: TPowerControllerInput },
): Promise<PowerControllerView> {
  const { password: _password, ...shown } = { password: undefined, ...input.controller };
  return audited(
    db,
    {
      actor,
      action: "host.power_controller_set",
      target: `host:${input.hostId}`,
      detail: {
        ...shown,
        passwordChanged: "password" in input.controller && input.controller.password !== undefined,
      },
    },
    () =>
      setPowerController(db, {
        hostId: input.hostId,
        actor: actor.name,
        controller: input.controller,
      }),
  );
}

export function auditedPowerControllerDeletion(
  db: Database,
  actor: AuditActor,
  hostId: string,
): Promise<{ hostId: string; deleted: PowerControllerView["kind"] }> {
  return audited(
    db,
    { actor, action: "host.power_controller_delete", target: `host:${hostId}` },
    () => deletePowerController(db, { hostId, actor: actor.name }),
  );
}
