import crypto from "node:crypto";
import { describe, expect, it } from "vitest";
import type { JoinAnswer } from "./discovery-api";
import { judgeMembership, type MemberAnswer } from "./membership-evidence";

/** A certificate fingerprint as Proxmox shows it; each call a new machine's key. */
const fp = () => crypto.randomBytes(32).toString("hex").toUpperCase().match(/../g)!.join(":");

type Site = { name: string; nodes: { name: string; nodeid: number; fp: string }[] };

function site(name: string, nodes = ["pve1", "pve2", "pve3"]): Site {
  return { name, nodes: nodes.map((n, i) => ({ name: n, nodeid: i + 1, fp: fp() })) };
}

const join = (s: Site): JoinAnswer => ({
  nodes: s.nodes.map((n) => ({ name: n.name, nodeid: n.nodeid, fingerprint: n.fp })),
  digest: "same-for-identical-sites",
});

/** A host onboarded on one node of a site, answering as Proxmox does. */
function host(
  s: Site,
  node: string,
  options: { hostName?: string; pin?: string; join?: JoinAnswer | { error: string } } = {},
): MemberAnswer {
  const own = s.nodes.find((n) => n.name === node)!;
  return {
    hostId: crypto.randomUUID(),
    hostName: options.hostName ?? `${s.name}-${node}`,
    node,
    pin: options.pin ?? own.fp,
    status: {
      kind: "cluster",
      name: s.name,
      quorate: true,
      local: node,
      nodes: s.nodes.map((n, i) => ({
        name: n.name,
        ip: `10.10.10.${11 + i}`,
        online: true,
        nodeid: n.nodeid,
      })),
    },
    join: options.join ?? join(s),
  };
}

const hostNames = (answer: ReturnType<typeof judgeMembership>) =>
  answer.parts.map((p) => p.members.map((m) => m.hostName).sort());

describe("which answering hosts are one cluster", () => {
  it("the hosts of one cluster are one group: each named with its served certificate in the others' configuration", () => {
    const a = site("pve-cluster");
    const judged = judgeMembership(["pve1", "pve2", "pve3"].map((n) => host(a, n)));
    expect(hostNames(judged)).toEqual([
      ["pve-cluster-pve1", "pve-cluster-pve2", "pve-cluster-pve3"],
    ]);
    expect(judged.relations).toEqual([]);
    expect(judged.parts[0]!.findings.join("\n")).toMatch(
      /pve-cluster-pve1 \(pve1\): named with the certificate it serves/,
    );
  });

  it("two sites with the same cluster name, node names, node ids and even corosync.conf are two clusters: their certificates differ", () => {
    const a = site("pve-cluster");
    const b = site("pve-cluster");
    const judged = judgeMembership([
      host(a, "pve1", { hostName: "a1" }),
      host(b, "pve1", { hostName: "b1" }),
      host(a, "pve2", { hostName: "a2" }),
      host(b, "pve2", { hostName: "b2" }),
    ]);
    expect(hostNames(judged)).toEqual([
      ["a1", "a2"],
      ["b1", "b2"],
    ]);
    expect(judged.relations).toEqual([
      {
        parts: [0, 1],
        kind: "apart",
        why: expect.stringMatching(/names pve1 with another certificate/),
      },
    ]);
  });

  it("a node behind a TLS proxy (it serves another certificate than its configuration names) is still in its cluster: its configuration is the others'", () => {
    const a = site("pve-cluster");
    const proxied = host(a, "pve3", { hostName: "a3", pin: fp() });
    const judged = judgeMembership([host(a, "pve1"), host(a, "pve2"), proxied]);
    expect(judged.parts).toHaveLength(1);
    expect(judged.parts[0]!.findings.join("\n")).toMatch(
      /a3 \(pve3\) serves another certificate .* than its cluster's configuration names for it/,
    );
  });

  it("a member whose configuration could not be read is known by the others' configuration", () => {
    const a = site("pve-cluster");
    const judged = judgeMembership([
      host(a, "pve1"),
      host(a, "pve2", { hostName: "a2", join: { error: "timed out" } }),
    ]);
    expect(judged.parts).toHaveLength(1);
    expect(judged.parts[0]!.findings.join("\n")).toMatch(
      /a2 \(pve2\): its cluster's configuration could not be read/,
    );
  });

  it("ambiguous: a host that serves a certificate no configuration names, and whose own cannot be read — another site's node, or this one's behind a proxy", () => {
    const a = site("pve-cluster");
    const judged = judgeMembership([
      host(a, "pve1", { hostName: "a1" }),
      host(a, "pve2", { hostName: "a2" }),
      host(a, "pve3", { hostName: "x3", pin: fp(), join: { error: "no join info" } }),
    ]);
    expect(hostNames(judged)).toEqual([["a1", "a2"], ["x3"]]);
    expect(judged.relations).toEqual([
      {
        parts: [0, 1],
        kind: "ambiguous",
        why: expect.stringMatching(
          /nothing else tells them apart.*x3's cluster configuration could not be read/,
        ),
      },
    ]);
  });

  it("a wildcard certificate on every node tells no machine apart: each host on its own, each pair ambiguous, and said why", () => {
    const wildcard = fp();
    const a = site("pve-cluster");
    for (const n of a.nodes) n.fp = wildcard;
    const judged = judgeMembership(["pve1", "pve2", "pve3"].map((n) => host(a, n)));
    expect(judged.parts).toHaveLength(3);
    expect(judged.relations.map((r) => r.kind)).toEqual(["ambiguous", "ambiguous", "ambiguous"]);
    expect(judged.parts[0]!.findings.join("\n")).toMatch(
      /a shared or wildcard certificate tells no machine apart/,
    );
  });

  it("a node that just joined is in the cluster although the others' configuration does not list it yet", () => {
    const a = site("pve-cluster", ["pve1", "pve2", "pve3", "pve4"]);
    const before: Site = { name: a.name, nodes: a.nodes.slice(0, 3) };
    const judged = judgeMembership([
      host(a, "pve1", { join: join(before) }),
      host(a, "pve4", { hostName: "new" }),
    ]);
    expect(judged.parts).toHaveLength(1);
  });

  it("apart without certificates: no node in common, or a node id that differs", () => {
    const wildcard = fp();
    const a = site("pve-cluster", ["a1", "a2"]);
    const b = site("pve-cluster", ["b1", "b2"]);
    const c = site("pve-cluster", ["a1", "a2"]);
    [c.nodes[0]!.nodeid, c.nodes[1]!.nodeid] = [2, 1];
    for (const s of [a, b, c]) for (const n of s.nodes) n.fp = wildcard;
    const judged = judgeMembership([host(a, "a1"), host(b, "b1"), host(c, "a2")]);
    expect(judged.relations.map((r) => [r.kind, r.why])).toEqual([
      ["apart", expect.stringMatching(/share no node/)],
      ["apart", expect.stringMatching(/node a1 has node id 1 in one and 2 in the other/)],
      ["apart", expect.stringMatching(/share no node/)],
    ]);
  });

  it("clusters of different names are never one, and never compared", () => {
    const judged = judgeMembership([host(site("east"), "pve1"), host(site("west"), "pve1")]);
    expect(judged.parts.map((p) => p.name)).toEqual(["east", "west"]);
    expect(judged.relations).toEqual([]);
  });
});
