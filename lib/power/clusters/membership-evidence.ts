import { normalizeFingerprint } from "@/lib/proxmox/pinned-https";
import type { ClusterAnswer, JoinAnswer } from "./discovery-api";

/**
 * Which answering hosts are members of the same cluster (docs/power-cluster-sequence.md,
 * "Which hosts are one cluster"). Pure: the answers in, the groups and what tells them apart out.
 *
 * A cluster's name is no identity: two sites may both call theirs "pve-cluster", with the same
 * node names, node ids and private addresses — even the same corosync.conf, byte for byte. What
 * two sites cannot share is a machine's certificate: each node's key is made on the node. Every
 * member reads the cluster's configuration from pmxcfs (`GET /cluster/config/join`): corosync's
 * nodelist with each node's `pve_fp`, the fingerprint of the certificate its pveproxy serves
 * (`pveproxy-ssl.pem` where one was installed, else `pve-ssl.pem`). The console pinned each
 * host's served certificate at onboarding, and the host answered over that pin just now.
 *
 * - A fingerprint is **telling** when everything seen gives it to one node name only: a
 *   certificate shared by several nodes (a wildcard one) tells no machine apart.
 * - Two hosts of the same cluster name are **one cluster** when one's configuration names the
 *   other's node with the telling certificate that host serves, or when both configurations name
 *   a node with the same telling certificate (both read the same pmxcfs: this holds even for a
 *   node behind a TLS proxy, or whose pveproxy was not restarted after a new certificate, where
 *   the served certificate differs from the configuration's).
 * - Two groups of the same name are **different clusters** when the answers contradict one:
 *   a host whose own configuration names it with the certificate it serves is missing from the
 *   other's configuration under that certificate; their configurations name a node with two
 *   different telling certificates; they share no node; or a node has two node ids.
 * - Anything else is **ambiguous**: said, and the shutdown plan treats them fail-safe.
 */

type ClusterStatus = Extract<ClusterAnswer, { kind: "cluster" }>;

export type MemberAnswer = {
  hostId: string;
  hostName: string;
  /** The node that answered: marked `local` in its status, else the node it was onboarded as. */
  node: string;
  /** The API certificate pinned at onboarding; it answered over it, so it serves it now. */
  pin: string;
  status: ClusterStatus;
  join: JoinAnswer | { error: string };
};

export type EvidencePart = {
  name: string;
  members: MemberAnswer[];
  /** How the console knows these hosts are one cluster, or what it could not tell, one line each. */
  findings: string[];
};

export type PartRelation = {
  /** Indexes into `parts`; both of the same cluster name. */
  parts: [number, number];
  kind: "apart" | "ambiguous";
  why: string;
};

export type MembershipJudgement = { parts: EvidencePart[]; relations: PartRelation[] };

/** What a cluster row keeps of the judgement (`power_clusters.membership`). */
export type ClusterMembership = {
  /**
   * confirmed: several hosts, joined by their certificates; single: one onboarded host answered
   * for it; ambiguous: another group of the same name could be the same cluster.
   */
  verdict: "confirmed" | "single" | "ambiguous";
  findings: string[];
  /** The other groups of the same name: told apart, or not (each with why). */
  sameName: { clusterId: string; hosts: string[]; kind: PartRelation["kind"]; why: string }[];
  judgedAt: string;
};

const short = (fp: string) => `${fp.slice(0, 8)}…`;
const pretty = (normalized: string) => normalized.match(/../g)!.join(":");

type View = Map<string, { nodeid: number | null; fp: string | null }>;

function viewOf(answer: MemberAnswer): View | null {
  if ("error" in answer.join) return null;
  return new Map(
    answer.join.nodes.map((n) => [
      n.name,
      { nodeid: n.nodeid, fp: n.fingerprint ? normalizeFingerprint(n.fingerprint) : null },
    ]),
  );
}

export function judgeMembership(answers: readonly MemberAnswer[]): MembershipJudgement {
  const members = answers.map((answer) => ({
    answer,
    pin: normalizeFingerprint(answer.pin),
    view: viewOf(answer),
  }));
  type Member = (typeof members)[number];

  // Which node names each fingerprint is given to, wherever it is seen.
  const namesOf = new Map<string, Set<string>>();
  const see = (fp: string | null, node: string) => {
    if (!fp) return;
    namesOf.set(fp, (namesOf.get(fp) ?? new Set()).add(node));
  };
  for (const m of members) {
    see(m.pin, m.answer.node);
    for (const [node, entry] of m.view ?? []) see(entry.fp, node);
  }
  const telling = (fp: string | null): fp is string => !!fp && namesOf.get(fp)!.size === 1;
  /** H's configuration names K's node with the certificate K serves. */
  const names = (h: Member, k: Member) =>
    telling(k.pin) && h.view?.get(k.answer.node)?.fp === k.pin;
  /** Both configurations name some node with the same telling certificate. */
  const shareConfig = (h: Member, k: Member) =>
    !!h.view &&
    !!k.view &&
    [...h.view].some(([node, e]) => telling(e.fp) && k.view!.get(node)?.fp === e.fp);
  const selfConfirmed = (k: Member) => names(k, k);

  const parts: EvidencePart[] = [];
  const relations: PartRelation[] = [];
  const byName = new Map<string, Member[]>();
  for (const m of members) {
    byName.set(m.answer.status.name, [...(byName.get(m.answer.status.name) ?? []), m]);
  }
  for (const [name, group] of byName) {
    // Union-find over the hosts of this name, joined by certificate evidence.
    const parent = group.map((_, i) => i);
    const find = (i: number): number => (parent[i] === i ? i : (parent[i] = find(parent[i]!)));
    for (let i = 0; i < group.length; i++) {
      for (let j = i + 1; j < group.length; j++) {
        const [h, k] = [group[i]!, group[j]!];
        if (names(h, k) || names(k, h) || shareConfig(h, k)) parent[find(i)] = find(j);
      }
    }
    const components = new Map<number, Member[]>();
    group.forEach((m, i) => components.set(find(i), [...(components.get(find(i)) ?? []), m]));
    const first = parts.length;
    const groupParts = [...components.values()];
    for (const part of groupParts) {
      parts.push({ name, members: part.map((m) => m.answer), findings: findingsOf(part) });
    }
    for (let a = 0; a < groupParts.length; a++) {
      for (let b = a + 1; b < groupParts.length; b++) {
        const apart = apartWhy(groupParts[a]!, groupParts[b]!);
        relations.push({
          parts: [first + a, first + b],
          kind: apart ? "apart" : "ambiguous",
          why: apart ?? ambiguousWhy(groupParts[a]!, groupParts[b]!),
        });
      }
    }
  }
  return { parts, relations };

  function findingsOf(part: Member[]): string[] {
    const lines: string[] = [];
    const who = (m: Member) => `${m.answer.hostName} (${m.answer.node})`;
    if (part.length === 1 && part[0]!.view && selfConfirmed(part[0]!)) {
      lines.push(
        `${who(part[0]!)}: its cluster's configuration names it with the certificate it serves (${short(pretty(part[0]!.pin))})`,
      );
    }
    for (const m of part) {
      if (part.length > 1) {
        const namedBy = part.filter((h) => h !== m && names(h, m));
        if (namedBy.length > 0) {
          lines.push(
            `${who(m)}: named with the certificate it serves (${short(pretty(m.pin))}) in the cluster configuration ${namedBy.map((h) => h.answer.hostName).join(", ")} read${namedBy.length === 1 ? "s" : ""}`,
          );
        } else if (m.view) {
          lines.push(
            `${who(m)}: reads the same cluster configuration as ${part
              .filter((h) => h !== m && shareConfig(h, m))
              .map((h) => h.answer.hostName)
              .join(", ")} (the same nodes with the same certificates)`,
          );
        } else {
          lines.push(
            `${who(m)}: named in the others' cluster configuration with a certificate it serves`,
          );
        }
      }
      const listed = m.view?.get(m.answer.node)?.fp;
      if (m.view && listed && listed !== m.pin) {
        lines.push(
          `${who(m)} serves another certificate (${short(pretty(m.pin))}) than its cluster's configuration names for it (${short(pretty(listed))}): a TLS proxy in front of it, or pveproxy not restarted since a new certificate`,
        );
      }
      if ("error" in m.answer.join) {
        lines.push(
          `${who(m)}: its cluster's configuration could not be read (GET /cluster/config/join): ${m.answer.join.error}`,
        );
      }
      if (!telling(m.pin)) {
        lines.push(
          `${who(m)} serves a certificate (${short(pretty(m.pin))}) other nodes serve too (${[...namesOf.get(m.pin)!].sort().join(", ")}): a shared or wildcard certificate tells no machine apart`,
        );
      }
    }
    return lines;
  }

  /** Why the two groups cannot be one cluster; null when nothing says so. */
  function apartWhy(p: Member[], q: Member[]): string | null {
    for (const [x, y] of [
      [p, q],
      [q, p],
    ] as const) {
      for (const k of y.filter(selfConfirmed)) {
        const h = x.find((m) => m.view && m.view.get(k.answer.node)?.fp !== k.pin);
        if (h) {
          const listed = h.view!.get(k.answer.node)?.fp;
          return `${h.answer.hostName}'s cluster configuration ${listed ? `names ${k.answer.node} with another certificate (${short(pretty(listed))})` : `has no node ${k.answer.node}`} than the one ${k.answer.hostName} serves and its own cluster names (${short(pretty(k.pin))})`;
        }
      }
    }
    for (const h of p) {
      for (const k of q) {
        if (h.view && k.view) {
          for (const [node, e] of h.view) {
            const other = k.view.get(node)?.fp;
            if (telling(e.fp) && telling(other ?? null) && other !== e.fp) {
              return `their cluster configurations name ${node} with two different certificates (${short(pretty(e.fp))}, ${short(pretty(other!))})`;
            }
          }
        }
        const hNodes = new Map(h.answer.status.nodes.map((n) => [n.name, n.nodeid]));
        const common = k.answer.status.nodes.filter((n) => hNodes.has(n.name));
        if (common.length === 0) {
          return `they share no node (${[...hNodes.keys()].join(", ")} and ${k.answer.status.nodes.map((n) => n.name).join(", ")})`;
        }
        const clash = common.find(
          (n) =>
            n.nodeid !== null && hNodes.get(n.name) !== null && hNodes.get(n.name) !== n.nodeid,
        );
        if (clash) {
          return `node ${clash.name} has node id ${hNodes.get(clash.name)} in one and ${clash.nodeid} in the other`;
        }
      }
    }
    return null;
  }

  function ambiguousWhy(p: Member[], q: Member[]): string {
    const reasons = new Set<string>();
    for (const m of [...p, ...q]) {
      if ("error" in m.answer.join) {
        reasons.add(
          `${m.answer.hostName}'s cluster configuration could not be read (${m.answer.join.error})`,
        );
      } else if (!telling(m.pin)) {
        reasons.add(`${m.answer.hostName} serves a certificate other nodes serve too`);
      } else if (!selfConfirmed(m)) {
        reasons.add(
          `${m.answer.hostName} serves another certificate than its cluster's configuration names for it`,
        );
      }
    }
    return `neither is named in the other's cluster configuration with the certificate it serves, and nothing else tells them apart (their node names and ids agree)${reasons.size > 0 ? `: ${[...reasons].join("; ")}` : ""}`;
  }
}
