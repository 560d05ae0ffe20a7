import type { Database } from "@/lib/db/client";
import { safeErrorSummary } from "@/lib/errors";
import { proxmoxClientForHost } from "@/lib/host-access/proxmox-client";
import { clusterApiFor, type GuestType } from "../clusters/sequence-api";
import type { ClusterGroup } from "../clusters/load-cluster-groups";
import type { ShutdownSettings } from "../config/settings";
import type { PveEndpoint, TargetRecord } from "../targets/load-targets";
import { CEPH_STORAGE_TYPES, guestVolumes, type GuestVolume } from "../clusters/guest-volumes";
import type { SelfTestCheck, SubjectCheck } from "./verdict";

type ConsoleGuest = NonNullable<ShutdownSettings["consoleGuest"]>;

/** What the cluster said about the console's guest: where it runs, its volumes, their types. */
export type ConsoleGuestFacts = {
  vmid: number;
  type: GuestType;
  name: string | null;
  /** The node it runs on now (HA may have moved it off the configured one). */
  node: string;
  volumes: readonly GuestVolume[];
  /** Storage id → type, for the storages the token may audit (`GET /storage`). */
  storageTypes: ReadonlyMap<string, string>;
};

const SET_IT =
  "If the console runs in a guest of this cluster, set shutdown.consoleGuest to its node and VMID (power settings); if it runs on a host the console protects, mark that host as running the console on the Targets page.";

/**
 * Hyper-converged clusters only: the console's own guest must not keep its disks on Ceph. Ceph
 * loses I/O while the cluster goes down node by node, and a console frozen on it can neither
 * finish the sequence nor report it. The console knows its guest only from the admin's
 * `shutdown.consoleGuest`; without it the check says it cannot tell, never ok.
 */
export async function checkConsoleGuest(
  db: Database,
  group: ClusterGroup,
  context: {
    consoleGuest: ShutdownSettings["consoleGuest"];
    targets: readonly TargetRecord[];
    members: readonly PveEndpoint[];
    timeoutMs: number;
  },
  check: SubjectCheck,
): Promise<SelfTestCheck> {
  const own = context.consoleGuest;
  if (own === null) {
    const host = context.targets.find((t) => t.runsConsole);
    if (host && !group.nodes.some((n) => n.targetId === host.id)) {
      return check(
        "ok",
        `The console runs on ${host.name}, which is not a member of ${group.name}: nothing of it lives on this cluster's Ceph.`,
      );
    }
    return check(
      "could-not-check",
      `${host ? `${host.name} is marked as running the console, but no` : "No"} console guest is set (shutdown.consoleGuest): the self-test cannot tell whether the console runs in a guest whose disks live on ${group.name}'s Ceph.`,
      SET_IT,
    );
  }
  if (!group.nodes.some((n) => n.name === own.node)) {
    return check(
      "ok",
      `The console's guest (${own.vmid} on ${own.node}) is not in ${group.name}: nothing of it lives on this cluster's Ceph.`,
    );
  }
  const asked = await askConsoleGuest(db, own, context.members, context.timeoutMs);
  if (asked.kind !== "asked") {
    return check(asked.kind === "wrong" ? "failed" : "could-not-check", asked.why, asked.next);
  }
  return judgeConsoleGuest(group.name, own, asked.facts, check);
}

/** The verdict on what the cluster said (pure: unit-tested with every outcome). */
export function judgeConsoleGuest(
  cluster: string,
  own: ConsoleGuest,
  facts: ConsoleGuestFacts,
  check: SubjectCheck,
): SelfTestCheck {
  const guest = `The console's guest ${facts.vmid}${facts.name ? ` (${facts.name})` : ""} on ${facts.node}`;
  const where = (v: GuestVolume) => {
    const type = facts.storageTypes.get(v.storage);
    return `${v.key} on ${v.storage}${type ? ` (${type})` : ""}`;
  };
  const moved =
    facts.node === own.node
      ? ""
      : ` It runs on ${facts.node}, not on ${own.node} as set: the sequence keeps ${own.node} for last, so ${facts.node} may go down under the console.`;
  const onCeph = facts.volumes.filter((v) =>
    CEPH_STORAGE_TYPES.has(facts.storageTypes.get(v.storage) ?? ""),
  );
  if (onCeph.length > 0) {
    return check(
      "warning",
      `${guest} keeps ${onCeph.map(where).join(", ")} on Ceph: as ${cluster}'s nodes go down, Ceph stops serving I/O before the console's own node is shut down, and the console freezes in the middle of the sequence, unable to finish it or report.${moved}`,
      `Move ${onCeph.length === 1 ? "that volume" : "those volumes"} to storage local to the node (qm disk move / pct move-volume, or Hardware → Disk Action → Move Storage), then run the self-test again.${moved ? " Correct shutdown.consoleGuest's node as well." : ""}`,
    );
  }
  const unknown = facts.volumes.filter((v) => !facts.storageTypes.has(v.storage));
  if (unknown.length > 0) {
    return check(
      "could-not-check",
      `${guest} has ${unknown.map(where).join(", ")}, on storage the console's token may not audit (GET /storage leaves it out): whether it is Ceph is unknown.${moved}`,
      "Grant the console's token Datastore.Audit on /storage, then run the self-test again.",
    );
  }
  const reason =
    facts.volumes.length === 0
      ? `${guest} has no volume on a Proxmox storage: nothing of it lives on Ceph.`
      : `${guest} keeps its volumes off Ceph: ${facts.volumes.map(where).join(", ")}.`;
  if (moved) {
    return check(
      "warning",
      `${reason}${moved}`,
      "Set shutdown.consoleGuest's node to where the guest runs, or move the guest back.",
    );
  }
  return check("ok", reason);
}

type Asked =
  | { kind: "asked"; facts: ConsoleGuestFacts }
  /** `unknown`: could not tell; `wrong`: the setting names no guest of the cluster. */
  | { kind: "unknown" | "wrong"; why: string; next: string };

/** Asks the guest's own node first (it answers for its guests without proxying). */
async function askConsoleGuest(
  db: Database,
  own: ConsoleGuest,
  members: readonly PveEndpoint[],
  timeoutMs: number,
): Promise<Asked> {
  if (members.length === 0) {
    return {
      kind: "unknown",
      why: `No protected member of the console guest's cluster to ask.`,
      next: "Protect a member of the cluster, then run the self-test again.",
    };
  }
  const ordered = [...members].sort(
    (a, b) => Number(b.nodeName === own.node) - Number(a.nodeName === own.node),
  );
  const failures: string[] = [];
  for (const endpoint of ordered) {
    try {
      const api = await clusterApiFor(db, endpoint, { timeoutMs });
      const found = (await api.guests()).find(
        (g): g is typeof g & { type: GuestType } =>
          g.vmid === own.vmid && (g.type === "qemu" || g.type === "lxc"),
      );
      if (!found) {
        // Proxmox leaves guests the token may not audit out of the list without a word.
        if (!(await api.seesAllGuests())) {
          return {
            kind: "unknown",
            why: `${endpoint.nodeName} lists no guest ${own.vmid}, but the console's token lacks VM.Audit on /vms, so the list may leave it out.`,
            next: "Grant the console's token VM.Audit on /vms, then run the self-test again.",
          };
        }
        return {
          kind: "wrong",
          why: `The cluster has no guest ${own.vmid} (shutdown.consoleGuest): the console's guest is not where the settings say, so the sequence would not spare the guest the console really runs in.`,
          next: "Set shutdown.consoleGuest to the node and VMID the console runs in.",
        };
      }
      const client = await proxmoxClientForHost(
        db,
        // Proxmox proxies `/nodes/{other}/…` to the node named.
        { ...endpoint, nodeName: found.node },
        { timeoutMs },
      );
      const [config, storages] = await Promise.all([
        client.guestConfig(found.type, found.vmid),
        client.storageConfigs(),
      ]);
      return {
        kind: "asked",
        facts: {
          vmid: found.vmid,
          type: found.type,
          name: found.name ?? null,
          node: found.node,
          volumes: guestVolumes(found.type, config),
          storageTypes: new Map(storages.map((s) => [s.storage, s.type])),
        },
      };
    } catch (error) {
      failures.push(`${endpoint.nodeName}: ${safeErrorSummary(error)}`);
    }
  }
  return {
    kind: "unknown",
    why: `No member answered about the console's guest ${own.vmid}: ${failures.join("; ")}.`,
    next: "Make sure a protected member's API answers, then run the self-test again.",
  };
}
