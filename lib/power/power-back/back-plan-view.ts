import { inArray, or } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { powerControllers } from "@/lib/db/schema";
import type { PowerMode } from "@/lib/power/config/settings";
import type { PowerBackPlan } from "./back-plan";
import { startBatches } from "./start-order";

/** Which kind of power controller a host has. */
export type ControllerKind = "redfish" | "ipmi" | "wol" | "pve-wol";

/**
 * A way back's plan as a person reads it before it runs — Bring back now's dialog, a drill's
 * way back, the plan preview beside the shutdown: the hosts in power-on order with their stored
 * controller (null: it will not come back on its own), the clusters whose Ceph flags or HA are
 * restored, the guests in start order with their up-delays. Made from the plan
 * `buildPowerBackPlan` gives — the function PlanPowerBack freezes — never a second planner.
 */
export type BackPlanView = {
  mode: PowerMode;
  hosts: {
    targetId: string;
    name: string;
    kind: "pve-node" | "pbs";
    monitor: boolean;
    cluster: string | null;
    controller: ControllerKind | null;
  }[];
  clusters: { name: string; nodes: string[]; cephFlags: string[]; haDisarmed: boolean }[];
  /** In the order StartGuests starts them (./start-order.ts). */
  guests: {
    vmid: number;
    type: "qemu" | "lxc";
    node: string;
    name: string | null;
    order: number | null;
    upSeconds: number | null;
    haManaged: boolean | null;
  }[];
  /** Nodes whose guests could not be listed: nothing is started there. */
  unknown: { node: string; why: string }[];
};

/**
 * The view of `plan`, with each host's stored controller (never a BMC read: this is asked on
 * every look at a power page).
 */
export async function backPlanView(
  db: Pick<Database, "select">,
  plan: PowerBackPlan,
): Promise<BackPlanView> {
  const hostIds = plan.hosts.flatMap((h) => (h.hostId ? [h.hostId] : []));
  // A backup server's controller hangs on its power target (it has no host row).
  const pbsIds = plan.hosts.flatMap((h) => (h.kind === "pbs" ? [h.targetId] : []));
  const owners = [
    ...(hostIds.length > 0 ? [inArray(powerControllers.hostId, hostIds)] : []),
    ...(pbsIds.length > 0 ? [inArray(powerControllers.targetId, pbsIds)] : []),
  ];
  const controllers =
    owners.length === 0
      ? []
      : await db
          .select({
            hostId: powerControllers.hostId,
            targetId: powerControllers.targetId,
            kind: powerControllers.kind,
          })
          .from(powerControllers)
          .where(or(...owners));
  const clusterName = new Map(plan.clusters.map((c) => [c.clusterId, c.name]));
  return {
    mode: plan.mode,
    hosts: plan.hosts.map((h) => ({
      targetId: h.targetId,
      name: h.name,
      kind: h.kind,
      monitor: h.monitor,
      cluster: h.clusterId ? (clusterName.get(h.clusterId) ?? null) : null,
      controller:
        controllers.find((c) =>
          h.hostId ? c.hostId === h.hostId : h.kind === "pbs" && c.targetId === h.targetId,
        )?.kind ?? null,
    })),
    clusters: plan.clusters.map((c) => ({
      name: c.name,
      nodes: c.nodes,
      cephFlags: c.cephFlags,
      haDisarmed: c.haDisarmed,
    })),
    guests: startBatches(plan.guests.map((g) => ({ ...g, order: g.startupOrder, up: g.upSeconds })))
      .flat()
      .map((g) => ({
        vmid: g.vmid,
        type: g.type,
        node: g.node,
        name: g.name,
        order: g.order,
        upSeconds: g.up,
        haManaged: g.haManaged,
      })),
    unknown: plan.unknown,
  };
}
