import type { GuestType } from "@/lib/power/clusters/sequence-api";
import { CONSOLIDATE_ON_CEPH, type ConsolidateMode } from "@/lib/power/clusters/schemas";
import { SHARED_STORAGE_TYPES, type GuestVolume } from "@/lib/power/clusters/guest-volumes";
import type { RemainingNode } from "./remaining-node";

/**
 * Whether consolidating a cluster can work, judged from what its API says (pure: the facts in,
 * the verdict out; lib/power/consolidate/read-facts.ts asks). "Could not check" is never "ok": a run that gets
 * anything but ok falls back to shutting the cluster down as one unit at the final threshold.
 *
 * - the node that stays is known (./remaining-node.ts), and some other node goes down;
 * - the cluster is quorate (Proxmox migrates nothing and disarms no HA without quorum);
 * - the token sees every guest (`VM.Audit` on /vms) and may move them: `VM.Migrate` (migrate)
 *   or `VM.PowerMgmt` (stop);
 * - HA can be disarmed first (9.2+), or there are no HA resources: the node that stays is left
 *   without quorum once the others are down, and an armed HA's watchdog resets a node that
 *   lost quorum while it runs HA guests;
 * - migrate only: the guests moving fit into the free memory of the node that stays (less a
 *   reserve for the host), every volume lives on storage shared by the cluster and available
 *   on that node, and no guest is tied to its node's hardware. Guests with volumes on local
 *   storage are not migrated with `with-local-disks`: copying their disks takes as long as the
 *   disks are big, over the battery's time — choose `stop` for such a cluster.
 */

/** What the host itself keeps beyond its guests (kernel, pveproxy, page cache for the I/O). */
export const HOST_MEMORY_RESERVE_BYTES = 1024 ** 3;

export type StorageFacts = { type: string; shared: boolean; nodes: string[] | null };

/** A running guest on a node that goes down at the first threshold. */
export type LeavingGuest = {
  vmid: number;
  type: GuestType;
  node: string;
  name: string | null;
  /** Its configured memory (`maxmem`); null when the list did not say. */
  maxmemBytes: number | null;
};

export type GuestConfigFacts = { volumes: GuestVolume[]; devices: string[] } | { error: string };

export type ConsolidateFacts = {
  quorate: boolean | null;
  /** The token's privileges on /vms. */
  vmPrivileges: ReadonlySet<string>;
  guests: readonly LeavingGuest[];
  /** By VMID; migrate only. */
  configs: ReadonlyMap<number, GuestConfigFacts>;
  /** Storage id → its definition, for the storages the token may audit (`GET /storage`). */
  storages: ReadonlyMap<string, StorageFacts>;
  /** The node that stays (`GET /nodes/{node}/status`); migrate only. */
  memory: { totalBytes: number; usedBytes: number } | { error: string } | null;
  /** `disarm`: the HA status index lists disarm-ha; `resources`: how many HA resources exist. */
  ha: { disarm: boolean; resources: number } | { error: string };
};

export type ConsolidateVerdict = "ok" | "failed" | "could-not-check";

export type ConsolidateCheck = {
  verdict: ConsolidateVerdict;
  checkedAt: string;
  mode: ConsolidateMode;
  remainingNode: string | null;
  leavingNodes: string[];
  /** Running guests on the nodes that go down (they move or stop). */
  guests: number;
  memory: { neededBytes: number; freeBytes: number; reserveBytes: number } | null;
  /** Why it cannot consolidate (failed) or cannot tell (could-not-check); empty when ok. */
  problems: string[];
  /** What was found, one line each (shown on the cluster card and in the plan). */
  findings: string[];
  /** One line: the verdict and its first reason. */
  summary: string;
};

export type ConsolidatePlanFacts = {
  cluster: string;
  /** Ceph's OSDs and monitors would go down with the nodes: never consolidated. */
  hyperConverged: boolean;
  mode: ConsolidateMode;
  remaining: RemainingNode;
  /** Protected nodes other than the one that stays: they go down at the first threshold. */
  leaving: string[];
};

const GiB = 1024 ** 3;
export const bytesText = (bytes: number) => `${(bytes / GiB).toFixed(1)} GiB`;

/** The check when the cluster's API could not be asked at all. */
export function uncheckable(plan: ConsolidatePlanFacts, why: string, now: Date): ConsolidateCheck {
  return finish(plan, now, { failed: [], unknown: [why], findings: [], guests: 0, memory: null });
}

export function judgeConsolidation(
  plan: ConsolidatePlanFacts,
  facts: ConsolidateFacts,
  now: Date,
): ConsolidateCheck {
  const failed: string[] = [];
  const unknown: string[] = [];
  const findings: string[] = [];
  const remaining = plan.remaining.node;

  if (facts.quorate === false) {
    failed.push(
      `${plan.cluster} has no quorum now: Proxmox neither migrates a guest nor disarms HA without it`,
    );
  } else if (facts.quorate === null) {
    unknown.push(`whether ${plan.cluster} is quorate is not known`);
  }

  const privs = facts.vmPrivileges;
  if (!privs.has("VM.Audit")) {
    unknown.push(
      "the console's token has no VM.Audit on /vms: Proxmox leaves the guests it may not see out of the list, so which guests would have to move is not known",
    );
  }
  const needed = plan.mode === "migrate" ? "VM.Migrate" : "VM.PowerMgmt";
  if (!privs.has(needed)) {
    failed.push(
      `the console's token lacks ${needed} on /vms, which ${plan.mode === "migrate" ? "migrating" : "stopping"} the guests needs: add it to the CluPilot role (pveum role modify CluPilot -append 1 -privs ${needed}), then check again`,
    );
  }

  if ("error" in facts.ha) {
    unknown.push(`HA could not be asked: ${facts.ha.error}`);
  } else if (!facts.ha.disarm && facts.ha.resources > 0) {
    failed.push(
      `HA cannot be disarmed on this Proxmox VE (disarm-ha arrived with 9.2) and ${facts.ha.resources} HA resource(s) exist: once the other nodes are down, ${remaining ?? "the node that stays"} has no quorum and an armed HA's watchdog resets it`,
    );
  } else {
    findings.push(
      facts.ha.disarm
        ? "HA: disarmed first (resource-mode=ignore), so nobody fences the node that stays"
        : "HA: no HA resources, nothing to disarm",
    );
  }

  const guestText = (g: LeavingGuest) => `${g.type} ${g.vmid}${g.name ? ` (${g.name})` : ""}`;
  let memory: ConsolidateCheck["memory"] = null;
  if (plan.mode === "migrate") {
    const unknownMemory = facts.guests.filter((g) => g.maxmemBytes === null);
    for (const g of unknownMemory)
      unknown.push(`the memory of ${guestText(g)} on ${g.node} is not known`);
    const neededBytes = facts.guests.reduce((sum, g) => sum + (g.maxmemBytes ?? 0), 0);
    if (facts.memory === null || "error" in facts.memory) {
      unknown.push(
        `the free memory of ${remaining ?? "the node that stays"} could not be read${facts.memory ? `: ${facts.memory.error}` : ""}`,
      );
    } else {
      const freeBytes = facts.memory.totalBytes - facts.memory.usedBytes;
      memory = { neededBytes, freeBytes, reserveBytes: HOST_MEMORY_RESERVE_BYTES };
      const fits = neededBytes <= freeBytes - HOST_MEMORY_RESERVE_BYTES;
      const line = `the ${facts.guests.length} guest(s) moving need ${bytesText(neededBytes)}; ${remaining} has ${bytesText(freeBytes)} free of ${bytesText(facts.memory.totalBytes)}, ${bytesText(HOST_MEMORY_RESERVE_BYTES)} kept for the host`;
      if (fits) findings.push(`memory: ${line}`);
      else failed.push(`not enough memory: ${line}`);
    }

    const sharedStorages = new Map<string, string>();
    for (const guest of facts.guests) {
      const config = facts.configs.get(guest.vmid);
      if (!config || "error" in config) {
        unknown.push(
          `the config of ${guestText(guest)} on ${guest.node} could not be read${config ? `: ${config.error}` : ""}`,
        );
        continue;
      }
      if (config.devices.length > 0) {
        failed.push(
          `${guestText(guest)} on ${guest.node} is tied to its node (${config.devices.join(", ")}): Proxmox does not migrate it`,
        );
      }
      for (const volume of config.volumes) {
        const storage = facts.storages.get(volume.storage);
        const where = `${guestText(guest)} on ${guest.node} has ${volume.key} on ${volume.storage}`;
        if (!storage) {
          unknown.push(
            `${where}, a storage the console's token may not audit (GET /storage leaves it out): whether every node reaches it is not known`,
          );
        } else if (!(storage.shared || SHARED_STORAGE_TYPES.has(storage.type))) {
          failed.push(
            `${where} (${storage.type}, local to ${guest.node}): it cannot be migrated live without copying the disk, which takes as long as the disk is big — use mode stop, or move the disk to shared storage`,
          );
        } else if (remaining && storage.nodes && !storage.nodes.includes(remaining)) {
          failed.push(
            `${where}, which is not available on ${remaining} (nodes ${storage.nodes.join(",")})`,
          );
        } else {
          sharedStorages.set(volume.storage, `${volume.storage} (${storage.type}, shared)`);
        }
      }
    }
    if (sharedStorages.size > 0) {
      findings.push(`storage: every node reaches ${[...sharedStorages.values()].join(", ")}`);
    }
  }
  return finish(plan, now, { failed, unknown, findings, guests: facts.guests.length, memory });
}

function finish(
  plan: ConsolidatePlanFacts,
  now: Date,
  found: {
    failed: string[];
    unknown: string[];
    findings: string[];
    guests: number;
    memory: ConsolidateCheck["memory"];
  },
): ConsolidateCheck {
  const failed = [...found.failed];
  if (plan.hyperConverged)
    failed.unshift(`${plan.cluster} is hyper-converged: ${CONSOLIDATE_ON_CEPH}`);
  else if (plan.remaining.node === null) failed.unshift(plan.remaining.why);
  else if (plan.leaving.length === 0) {
    failed.unshift(
      `no protected node of ${plan.cluster} but ${plan.remaining.node}: nothing would go down at the first threshold`,
    );
  }
  const verdict: ConsolidateVerdict =
    failed.length > 0 ? "failed" : found.unknown.length > 0 ? "could-not-check" : "ok";
  const problems = [...failed, ...found.unknown];
  const what =
    plan.mode === "migrate"
      ? `migrate ${found.guests} guest(s) from ${plan.leaving.join(", ") || "no node"} to ${plan.remaining.node ?? "?"}`
      : `stop ${found.guests} guest(s) on ${plan.leaving.join(", ") || "no node"}`;
  const findings = [
    plan.remaining.node ? `stays up: ${plan.remaining.node} (${plan.remaining.why})` : null,
    ...found.findings,
  ].filter((line): line is string => line !== null);
  return {
    verdict,
    checkedAt: now.toISOString(),
    mode: plan.mode,
    remainingNode: plan.remaining.node,
    leavingNodes: plan.leaving,
    guests: found.guests,
    memory: found.memory,
    problems,
    findings,
    summary:
      verdict === "ok"
        ? `consolidation can work: ${what}, then shut ${plan.leaving.join(", ")} down`
        : `${verdict === "failed" ? "consolidation cannot work" : "consolidation could not be checked"}: ${problems[0]}`,
  };
}
