import { describe, expect, it } from "vitest";
import { refusal, type MemberFacts } from "./leave-cluster";

/** A cluster as the member that stays sees it: these nodes, these online, one vote each unless said. */
function seen(
  nodes: (string | [string, number])[],
  online: string[],
  extra: Partial<Pick<MemberFacts, "guests" | "quorate">> = {},
): MemberFacts {
  return {
    corosync: {
      clusterName: "prod",
      nodes: nodes.map((n, i) => {
        const [name, votes] = typeof n === "string" ? [n, 1] : n;
        return { name, nodeid: i + 1, votes, ring0Addr: `10.0.0.${i + 1}` };
      }),
    },
    quorate: true,
    online: new Set(online),
    guests: [],
    leftovers: true,
    ...extra,
  };
}

describe("LeaveCluster's refusals: what keeps a member in its cluster", () => {
  it("lets a node of a healthy three-node cluster go: two of three votes stay online", () => {
    expect(refusal(seen(["a", "b", "c"], ["a", "b", "c"]), "c", "prod", "a")).toBeNull();
  });

  it("refuses a node that holds guests, naming their VMIDs", () => {
    const facts = seen(["a", "b", "c"], ["a", "b", "c"], { guests: ["100", "101"] });
    expect(refusal(facts, "c", "prod", "a")).toBe(
      "c holds 2 guest(s) (VMID 100, 101): migrate or remove them before it leaves 'prod'. Nothing was changed.",
    );
  });

  it("refuses while the cluster has no quorum", () => {
    const facts = seen(["a", "b", "c"], ["a"], { quorate: false });
    expect(refusal(facts, "c", "prod", "a")).toMatch(/^'prod' has no quorum as a sees it/);
  });

  it("refuses a node the quorate majority needs: one of three already offline", () => {
    expect(refusal(seen(["a", "b", "c"], ["a", "c"]), "c", "prod", "a")).toBe(
      "c is needed for the quorate majority of 'prod': 2 of 3 votes online, 1 without it — the cluster would lose quorum. Bring the offline members back first. Nothing was changed.",
    );
  });

  it("refuses either node of a two-node cluster: one vote of two is no majority", () => {
    expect(refusal(seen(["a", "b"], ["a", "b"]), "b", "prod", "a")).toMatch(
      /1 without it — the cluster would lose quorum/,
    );
  });

  it("lets a node go that is already down when the others hold the majority without it", () => {
    expect(refusal(seen(["a", "b", "c"], ["a", "b"]), "c", "prod", "a")).toBeNull();
  });

  it("counts quorum_votes, not nodes", () => {
    // a has 3 votes of 5: without a, 2 of 5 stay — refused; without c, 4 of 5 — fine.
    const facts = seen([["a", 3], "b", "c"], ["a", "b", "c"]);
    expect(refusal(facts, "a", "prod", "b")).toMatch(/5 votes online, 2 without it/);
    expect(refusal(facts, "c", "prod", "a")).toBeNull();
  });

  it("has nothing to refuse for a node no longer in the member list", () => {
    expect(refusal(seen(["a", "b"], ["a", "b"], { guests: ["100"] }), "c", "prod", "a")).toBeNull();
  });
});
