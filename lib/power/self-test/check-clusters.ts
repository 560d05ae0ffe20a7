import type { Database } from "@/lib/db/client";
import { safeErrorSummary } from "@/lib/errors";
import { proxmoxClientForHost } from "@/lib/host-access/proxmox-client";
import { clusterApiFor, SHUTDOWN_CEPH_FLAGS } from "../clusters/sequence-api";
import { loadClusterGroups, type ClusterGroup } from "../clusters/load-cluster-groups";
import { readPowerSettings } from "../config/power-settings-store";
import type { PveEndpoint, TargetRecord } from "../targets/load-targets";
import { checkConsoleGuest } from "./check-console-guest";
import type { SelfTestCheck, SelfTestVerdict } from "./verdict";

/** What one member's API said about its cluster, asked now (the stored record may be old). */
type ClusterFacts = {
  node: string;
  quorate: boolean | null;
  /** HA's armed-state; null where HA has no disarm (before PVE 9.2). */
  haArmedState: string | null;
  /** Shutdown flags still set (hyper-converged Ceph only). */
  cephFlags: string[];
  shutdownPolicy: string;
};

/**
 * Once per cluster: quorum, what an earlier outage may have left behind (HA disarmed, Ceph
 * flags), the HA shutdown policy, members the console does not protect, Ceph monitor nodes
 * going down after the others, and the console's own guest off Ceph.
 */
export async function checkClusters(
  db: Database,
  targets: readonly TargetRecord[],
  options: { timeoutMs: number },
): Promise<SelfTestCheck[]> {
  const [groups, settings] = await Promise.all([loadClusterGroups(db), readPowerSettings(db)]);
  const checks: SelfTestCheck[] = [];
  for (const group of groups) {
    const check =
      (kind: string, title: string) =>
      (verdict: SelfTestVerdict, reason: string, next: string | null = null): SelfTestCheck => ({
        key: `cluster-${kind}:${group.id}`,
        title: `cluster ${group.name}: ${title}`,
        subject: group.name,
        verdict,
        reason,
        next,
      });
    checks.push(judgeProtection(group, check("protection", "every node is protected")));
    if (group.hyperConverged) {
      checks.push(
        judgeMonitorOrder(group, targets, check("monitors", "Ceph monitor nodes go last")),
      );
    }
    const members = group.nodes.flatMap((n) => {
      const endpoint = targets.find((t) => t.id === n.targetId)?.endpoint;
      return endpoint?.kind === "pve-node" ? [endpoint] : [];
    });
    if (group.hyperConverged) {
      checks.push(
        await checkConsoleGuest(
          db,
          group,
          {
            consoleGuest: settings.shutdown.consoleGuest,
            targets,
            members,
            timeoutMs: options.timeoutMs,
          },
          check("console-guest", "the console's own guest is not on Ceph"),
        ),
      );
    }
    const asked = await askCluster(db, group, members, options.timeoutMs);
    const quorum = check("quorum", "the cluster is quorate");
    const leftovers = check("leftovers", "nothing left over from an earlier outage");
    const policy = check("ha-policy", "the HA shutdown policy suits the sequence");
    if (asked.kind === "unknown") {
      const next = "Make sure a protected member's API answers, then run the self-test again.";
      checks.push(
        quorum("could-not-check", asked.why, next),
        leftovers("could-not-check", asked.why, next),
        policy("could-not-check", asked.why, next),
      );
      continue;
    }
    const facts = asked.facts;
    checks.push(
      facts.quorate === true
        ? quorum("ok", `${facts.node} reports the cluster quorate.`)
        : facts.quorate === false
          ? quorum(
              "failed",
              `${facts.node} reports no quorum: /etc/pve is read-only, HA cannot be disarmed and the cluster's preparation would fail.`,
              "Bring the missing nodes back or fix corosync before the next outage.",
            )
          : quorum(
              "could-not-check",
              `${facts.node}'s GET /cluster/status did not say whether it is quorate.`,
              null,
            ),
      judgeLeftovers(facts, leftovers),
      judgeHaPolicy(group, facts, policy),
    );
  }
  return checks;
}

function judgeProtection(
  group: ClusterGroup,
  check: (verdict: SelfTestVerdict, reason: string, next?: string | null) => SelfTestCheck,
): SelfTestCheck {
  const unprotected = group.nodes.filter((n) => n.targetId === null).map((n) => n.name);
  if (unprotected.length === 0)
    return check("ok", `All ${group.nodes.length} nodes are protected.`);
  return check(
    "warning",
    `${unprotected.join(", ")} ${unprotected.length === 1 ? "is a member" : "are members"} the console does not protect: in an outage ${unprotected.length === 1 ? "it keeps" : "they keep"} running until the battery is empty (their guests are stopped with the cluster's).`,
    "Onboard and protect them (Targets page), or accept that they die hard.",
  );
}

/** Under the `cluster` policy the sequence orders monitors itself; per host, the stages do. */
function judgeMonitorOrder(
  group: ClusterGroup,
  targets: readonly TargetRecord[],
  check: (verdict: SelfTestVerdict, reason: string, next?: string | null) => SelfTestCheck,
): SelfTestCheck {
  if (group.policy !== "per-host") {
    return check(
      "ok",
      "The cluster is shut down as one unit: its sequence takes the Ceph monitor nodes down after the others.",
    );
  }
  const stageOf = (targetId: string | null) => targets.find((t) => t.id === targetId)?.stage;
  const protectedNodes = group.nodes.filter((n) => stageOf(n.targetId) !== undefined);
  const others = protectedNodes.filter((n) => !n.cephMon);
  const lastOther = Math.max(...others.map((n) => stageOf(n.targetId)!), -Infinity);
  const early = protectedNodes.filter((n) => n.cephMon && stageOf(n.targetId)! <= lastOther);
  if (early.length === 0)
    return check("ok", "Every Ceph monitor node's stage comes after the other nodes'.");
  return check(
    "failed",
    `Ceph monitor ${early.map((n) => `${n.name} (stage ${stageOf(n.targetId)})`).join(", ")} ${early.length === 1 ? "goes" : "go"} down no later than the other nodes (last stage ${lastOther}): Ceph loses its monitors while OSDs still run, and the remaining nodes' I/O freezes.`,
    "Give the monitor nodes a higher stage than every other node, or shut the cluster down as one unit.",
  );
}

function judgeLeftovers(
  facts: ClusterFacts,
  check: (verdict: SelfTestVerdict, reason: string, next?: string | null) => SelfTestCheck,
): SelfTestCheck {
  const found: string[] = [];
  if (facts.haArmedState === "disarmed" || facts.haArmedState === "disarming") {
    found.push(`HA is ${facts.haArmedState}: it protects no guest until re-armed`);
  }
  if (facts.cephFlags.length > 0) {
    found.push(
      `Ceph flags ${facts.cephFlags.join(", ")} are still set: Ceph neither recovers nor rebalances`,
    );
  }
  if (found.length === 0) {
    return check(
      "ok",
      `HA ${facts.haArmedState ?? "has no disarm on this version"}; no shutdown flag set on Ceph.`,
    );
  }
  return check(
    "failed",
    `Left over from an earlier outage: ${found.join("; ")}.`,
    "Once every node is back: re-arm HA (pvesh create /cluster/ha/status/arm-ha) and clear the flags (ceph osd unset noout, …), then run the self-test again.",
  );
}

function judgeHaPolicy(
  group: ClusterGroup,
  facts: ClusterFacts,
  check: (verdict: SelfTestVerdict, reason: string, next?: string | null) => SelfTestCheck,
): SelfTestCheck {
  const policy = facts.shutdownPolicy;
  const disarms = facts.haArmedState !== null && group.policy !== "per-host";
  if (disarms) {
    return check(
      "ok",
      `shutdown_policy=${policy}; the sequence disarms HA (resource-mode=ignore) first, so the policy does not move guests.`,
    );
  }
  if (policy === "freeze") {
    return check(
      "ok",
      "shutdown_policy=freeze: a node going down leaves its HA guests where they are.",
    );
  }
  const why =
    facts.haArmedState === null
      ? "this Proxmox VE has no HA disarm (9.2+)"
      : "the cluster is shut down host by host, without disarming HA";
  return check(
    "warning",
    `shutdown_policy=${policy} while ${why}: HA may move guests onto nodes about to go down, or restart them there.`,
    "Set shutdown_policy=freeze (Datacenter → Options → HA Settings), or upgrade to Proxmox VE 9.2 and shut the cluster down as one unit.",
  );
}

async function askCluster(
  db: Database,
  group: ClusterGroup,
  members: readonly PveEndpoint[],
  timeoutMs: number,
): Promise<{ kind: "asked"; facts: ClusterFacts } | { kind: "unknown"; why: string }> {
  if (members.length === 0) {
    return { kind: "unknown", why: `No protected member of ${group.name} to ask.` };
  }
  const failures: string[] = [];
  for (const endpoint of members) {
    try {
      const client = await proxmoxClientForHost(db, endpoint, { timeoutMs });
      const api = await clusterApiFor(db, endpoint, { timeoutMs });
      const [status, options, haArmedState, flags] = await Promise.all([
        client.clusterStatus(),
        client.clusterOptions(),
        api.haArmedState(),
        group.hyperConverged ? api.cephFlags() : Promise.resolve(new Set<string>()),
      ]);
      const quorate = status.find((e) => e.type === "cluster")?.quorate;
      return {
        kind: "asked",
        facts: {
          node: endpoint.nodeName,
          quorate: quorate === undefined ? null : quorate === 1,
          haArmedState,
          cephFlags: SHUTDOWN_CEPH_FLAGS.filter((f) => flags.has(f)),
          shutdownPolicy: options.ha?.shutdown_policy ?? "conditional",
        },
      };
    } catch (error) {
      failures.push(`${endpoint.nodeName}: ${safeErrorSummary(error)}`);
    }
  }
  return { kind: "unknown", why: `No member of ${group.name} answered: ${failures.join("; ")}.` };
}
