import type { Database } from "@/lib/db/client";
import { safeErrorSummary } from "@/lib/errors";
import { proxmoxClientForHost } from "@/lib/host-access/proxmox-client";
import { clusterApiFor, type GuestType } from "@/lib/power/clusters/sequence-api";
import type { ClusterGroup } from "@/lib/power/clusters/load-cluster-groups";
import { guestDevices, guestVolumes } from "@/lib/power/clusters/guest-volumes";
import type { PveEndpoint } from "@/lib/power/targets/load-targets";
import {
  judgeConsolidation,
  uncheckable,
  type ConsolidateCheck,
  type ConsolidateFacts,
  type GuestConfigFacts,
  type LeavingGuest,
  type StorageFacts,
} from "../clusters/consolidation-check";
import type { Consolidation } from "../clusters/remaining-node";

/**
 * Asks the cluster what the consolidation check judges (lib/power/clusters/consolidation-check.ts): through the API of the node
 * that stays (else the first protected member that answers) the quorum, the token's privileges
 * on /vms, the guest list, HA and the storage definitions, and the free memory of the node that
 * stays; each running guest's config from its own node. Only reads; the same reads as the
 * console-guest self-test (lib/power/self-test/check-console-guest.ts) for configs and storage.
 */
export async function checkConsolidation(
  db: Database,
  group: Pick<ClusterGroup, "name">,
  plan: Consolidation,
  context: {
    /** Endpoints of the cluster's protected members, by node name. */
    endpoints: ReadonlyMap<string, PveEndpoint>;
    timeoutMs: number;
    onSecret?: (secret: string) => void;
    now?: () => Date;
  },
): Promise<ConsolidateCheck> {
  const now = context.now ?? (() => new Date());
  const order = [
    ...(plan.remaining.node ? [plan.remaining.node] : []),
    ...[...context.endpoints.keys()].filter((n) => n !== plan.remaining.node),
  ];
  const failures: string[] = [];
  for (const name of order) {
    const endpoint = context.endpoints.get(name);
    if (!endpoint) continue;
    try {
      const facts = await readFacts(db, plan, endpoint, context);
      return judgeConsolidation(plan, facts, now());
    } catch (error) {
      failures.push(`${name}: ${safeErrorSummary(error)}`);
    }
  }
  return uncheckable(
    plan,
    failures.length > 0
      ? `no member of ${group.name} answered: ${failures.join("; ")}`
      : `no protected member of ${group.name} has an API address, token and pin to ask`,
    now(),
  );
}

const reason = (error: unknown) =>
  error instanceof Error ? error.message : safeErrorSummary(error);

/** What one member says; throws when the basics (guests, privileges) cannot be read. */
async function readFacts(
  db: Database,
  plan: Consolidation,
  endpoint: PveEndpoint,
  context: {
    endpoints: ReadonlyMap<string, PveEndpoint>;
    timeoutMs: number;
    onSecret?: (s: string) => void;
  },
): Promise<ConsolidateFacts> {
  const options = {
    timeoutMs: context.timeoutMs,
    ...(context.onSecret ? { onSecret: context.onSecret } : {}),
  };
  const api = await clusterApiFor(db, endpoint, options);
  const client = await proxmoxClientForHost(db, endpoint, options);
  const [vmPrivileges, resources, status] = await Promise.all([
    api.vmPrivileges(),
    api.guests(),
    client.clusterStatus(),
  ]);
  const clusterEntry = status.find((e) => e.type === "cluster");
  const leaving = new Set(plan.leaving);
  const guests: LeavingGuest[] = resources.flatMap((g) =>
    (g.type === "qemu" || g.type === "lxc") &&
    g.status === "running" &&
    g.template !== 1 &&
    leaving.has(g.node)
      ? [
          {
            vmid: g.vmid,
            type: g.type as GuestType,
            node: g.node,
            name: g.name ?? null,
            maxmemBytes: g.maxmem ?? null,
          },
        ]
      : [],
  );

  const ha = Promise.all([api.canDisarmHa(), api.haResourceCount()]).then(
    ([disarm, count]) => ({ disarm, resources: count }),
    (error: unknown) => ({ error: reason(error) }),
  );
  if (plan.mode === "stop") {
    return {
      quorate: clusterEntry?.quorate === undefined ? null : clusterEntry.quorate === 1,
      vmPrivileges,
      guests,
      configs: new Map(),
      storages: new Map(),
      memory: null,
      ha: await ha,
    };
  }

  const remaining = plan.remaining.node ? context.endpoints.get(plan.remaining.node) : undefined;
  const memory = remaining
    ? proxmoxClientForHost(db, remaining, options)
        .then((c) => c.nodeStatus())
        .then(
          (s) =>
            s.memory.used === undefined
              ? { error: "the node's status gives no used memory" }
              : { totalBytes: s.memory.total, usedBytes: s.memory.used },
          (error: unknown) => ({ error: reason(error) }),
        )
    : Promise.resolve({
        error: `${plan.remaining.node ?? "the node that stays"} is not a protected node the console can ask`,
      });
  const storages = client.storageConfigs().then(
    (list) =>
      new Map<string, StorageFacts>(
        list.map((s) => [
          s.storage,
          {
            type: s.type,
            shared: Number(s.shared ?? 0) === 1,
            nodes: typeof s.nodes === "string" && s.nodes !== "" ? s.nodes.split(",") : null,
          },
        ]),
      ),
  );
  const configs = new Map<number, GuestConfigFacts>();
  await Promise.all(
    guests.map(async (guest) => {
      const own = context.endpoints.get(guest.node);
      if (!own) {
        configs.set(guest.vmid, {
          error: `${guest.node} is not a protected node the console can ask`,
        });
        return;
      }
      try {
        const config = await (
          await proxmoxClientForHost(db, own, options)
        ).guestConfig(guest.type, guest.vmid);
        configs.set(guest.vmid, {
          volumes: guestVolumes(guest.type, config),
          devices: guestDevices(guest.type, config),
        });
      } catch (error) {
        configs.set(guest.vmid, { error: reason(error) });
      }
    }),
  );
  return {
    quorate: clusterEntry?.quorate === undefined ? null : clusterEntry.quorate === 1,
    vmPrivileges,
    guests,
    configs,
    storages: await storages,
    memory: await memory,
    ha: await ha,
  };
}
