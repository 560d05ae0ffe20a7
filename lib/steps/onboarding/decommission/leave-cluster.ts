import { and, asc, eq, isNull, ne } from "drizzle-orm";
import { z } from "zod";
import type { Database } from "@/lib/db/client";
import { hosts } from "@/lib/db/schema";
import { loadCredentialAuth } from "@/lib/host-access/host-credential";
import { alreadyInPlace } from "@/lib/pipeline/already-in-place";
import {
  advance,
  fail,
  poll,
  type Outcome,
  type Step,
  type StepContext,
} from "@/lib/pipeline/step";
import { connectSsh, sh, SshConnectError, type ExecResult } from "@/lib/ssh";
import type { SshConnectFailure } from "@/lib/ssh/errors";
import { parseCorosyncConf, withMemberSession, type CorosyncFacts } from "../cluster-membership";
import { NODE_NAME_RE } from "../create-api-token";
import type { HostRecord, HostServices } from "../services";

/** Context key: when this run asked the node to shut down (ISO time). */
const SHUTDOWN_AT = "decommission.leaveCluster.shutdownAt";
/** Context key: the node left its cluster in this run — the later steps leave the cluster's things alone. */
export const LEFT_CLUSTER = "decommission.leftCluster";
export type LeftCluster = { cluster: string; node: string; via: string };

/** How long the node may take to be seen down after its shutdown was asked. */
const DOWN_DEADLINE_SECONDS = 600;

const ZClusterStatus = z.array(
  z
    .object({
      type: z.string(),
      name: z.string(),
      quorate: z.number().optional(),
      online: z.number().optional(),
    })
    .loose(),
);

type MemberExec = (command: string, timeoutMs?: number) => Promise<ExecResult>;

/** What the member that stays sees: the nodelist, the quorum, the node's guests and leftovers. */
export type MemberFacts = {
  corosync: CorosyncFacts;
  quorate: boolean;
  online: Set<string>;
  guests: string[];
  leftovers: boolean;
};

const guestsCommand = (node: string) =>
  sh`for f in /etc/pve/nodes/${node}/qemu-server/*.conf /etc/pve/nodes/${node}/lxc/*.conf; ` +
  `do [ -e "$f" ] && basename "$f" .conf; done; true`;
const leftoversCommand = (node: string) =>
  sh`if [ -e /etc/pve/nodes/${node} ]; then echo present; else echo absent; fi`;
export const delnodeCommand = (node: string) => sh`pvecm delnode ${node}`;
export const removeLeftoversCommand = (node: string) => sh`rm -rf -- /etc/pve/nodes/${node}`;

async function logged(
  ctx: StepContext<HostServices>,
  exec: MemberExec,
  via: string,
  command: string,
): Promise<ExecResult> {
  ctx.log(`$ ${command}   (on ${via})`);
  const result = await exec(command);
  const output = `${result.stdout}${result.stderr}`.trim();
  ctx.log(
    `◀ exit ${String(result.code)}${output ? `: ${output.split("\n").slice(-4).join(" | ")}` : ""}`,
  );
  return result;
}

async function memberFacts(exec: MemberExec, node: string, via: string): Promise<MemberFacts> {
  const conf = await exec("cat /etc/pve/corosync.conf");
  if (conf.code !== 0) throw new Error(`${via} has no /etc/pve/corosync.conf: it is in no cluster`);
  const status = await exec("pvesh get /cluster/status --output-format json", 60_000);
  if (status.code !== 0)
    throw new Error(`pvesh get /cluster/status on ${via} failed: ${status.stderr.trim()}`);
  const entries = ZClusterStatus.parse(JSON.parse(status.stdout));
  const guests = await exec(guestsCommand(node));
  if (guests.code !== 0) throw new Error(`listing ${node}'s guests on ${via} failed`);
  const leftovers = await exec(leftoversCommand(node));
  if (leftovers.code !== 0) throw new Error(`looking for /etc/pve/nodes/${node} on ${via} failed`);
  return {
    corosync: parseCorosyncConf(conf.stdout),
    quorate: entries.some((e) => e.type === "cluster" && e.quorate === 1),
    online: new Set(entries.filter((e) => e.type === "node" && e.online === 1).map((e) => e.name)),
    guests: guests.stdout
      .split("\n")
      .map((l) => l.trim())
      .filter(Boolean),
    leftovers: leftovers.stdout.trim() === "present",
  };
}

/** Other hosts the console manages in the same cluster, the longest onboarded first. */
async function otherMembers(db: Database, host: HostRecord): Promise<HostRecord[]> {
  return db
    .select()
    .from(hosts)
    .where(
      and(eq(hosts.clusterName, host.clusterName!), ne(hosts.id, host.id), isNull(hosts.retiredAt)),
    )
    .orderBy(asc(hosts.createdAt), asc(hosts.id));
}

/**
 * Whether the node still takes an SSH connection. Only a connection that does not come up
 * (refused, unreachable, timed out, closed) counts as down: a changed host key or a refused
 * login means something still answers there, and a name that does not resolve says nothing
 * about the node — none of those lets a node be removed as down.
 */
async function answersSsh(services: HostServices, host: HostRecord): Promise<boolean> {
  const auth = await loadCredentialAuth(services.db, host.credentialId);
  try {
    const session = await connectSsh({
      host: host.address,
      port: host.sshPort,
      username: host.sshUser,
      auth,
      pinnedHostKey: host.hostKeySha256,
      readyTimeoutMs: 10_000,
    });
    session.close();
    return true;
  } catch (error) {
    return !(error instanceof SshConnectError && DOWN_REASONS.includes(error.reason));
  }
}
const DOWN_REASONS: readonly SshConnectFailure[] = ["refused", "unreachable", "timeout", "closed"];

/**
 * Why the node may not leave, or null: it holds guests (their configurations would go with it),
 * the cluster has no quorum (pvecm delnode needs it), or its quorum needs this node — while the
 * node is down and not yet removed it still counts in the expected votes, so the others alone
 * must be more than half of all votes.
 */
export function refusal(
  facts: MemberFacts,
  node: string,
  cluster: string,
  via: string,
): string | null {
  const listed = facts.corosync.nodes.find((n) => n.name === node);
  if (!listed) return null;
  if (facts.guests.length > 0)
    return `${node} holds ${facts.guests.length} guest(s) (VMID ${facts.guests.join(", ")}): migrate or remove them before it leaves '${cluster}'. Nothing was changed.`;
  if (!facts.quorate)
    return `'${cluster}' has no quorum as ${via} sees it: a member can only be removed from a quorate cluster. Nothing was changed.`;
  const totalVotes = facts.corosync.nodes.reduce((sum, n) => sum + n.votes, 0);
  const onlineVotes = facts.corosync.nodes
    .filter((n) => facts.online.has(n.name))
    .reduce((sum, n) => sum + n.votes, 0);
  const withoutIt = onlineVotes - (facts.online.has(node) ? listed.votes : 0);
  if (withoutIt <= totalVotes / 2)
    return `${node} is needed for the quorate majority of '${cluster}': ${onlineVotes} of ${totalVotes} votes online, ${withoutIt} without it — the cluster would lose quorum. Bring the offline members back first. Nothing was changed.`;
  return null;
}

/**
 * The refusal LeaveCluster would give now, asked before a decommission starts (lib/hosts): a
 * refused decommission then starts no run at all, and the host stays as it was. Null when the
 * host is in no cluster the console made, when nothing refuses it, or when no member that stays
 * answers (the step decides then).
 */
export async function leaveClusterRefusal(db: Database, host: HostRecord): Promise<string | null> {
  const node = host.nodeName;
  if (!host.clusterName || !node || !NODE_NAME_RE.test(node)) return null;
  for (const via of await otherMembers(db, host)) {
    try {
      return await withMemberSession(db, via, async (exec) =>
        refusal(await memberFacts(exec, node, via.name), node, host.clusterName!, via.name),
      );
    } catch {
      // the next member
    }
  }
  return null;
}

/**
 * The decision on what the member that stays sees, row by row (docs/hosts.md, "Leaving a
 * cluster"). Refusals come before any change: a node holding guests (their configurations would
 * go with it), a cluster without quorum, or one whose quorum needs this node.
 */
async function decide(
  ctx: StepContext<HostServices>,
  host: HostRecord,
  node: string,
  via: HostRecord,
  exec: MemberExec,
): Promise<Outcome> {
  const cluster = host.clusterName!;
  const facts = await memberFacts(exec, node, via.name);
  const listed = facts.corosync.nodes.find((n) => n.name === node);
  const done = async (how: string): Promise<Outcome> => {
    if (facts.leftovers) {
      const removed = await logged(ctx, exec, via.name, removeLeftoversCommand(node));
      if (removed.code !== 0)
        return fail(
          `removing /etc/pve/nodes/${node} on ${via.name} failed: ${removed.stderr.trim()}`,
        );
    }
    const after = await memberFacts(exec, node, via.name);
    if (after.corosync.nodes.some((n) => n.name === node))
      return fail(`${node} is still in the member list of '${cluster}' as ${via.name} reads it.`);
    if (!after.quorate)
      return fail(`'${cluster}' has no quorum after ${node} left, as ${via.name} sees it.`);
    if (after.leftovers) return fail(`/etc/pve/nodes/${node} is still there on ${via.name}.`);
    const left: LeftCluster = { cluster, node, via: via.name };
    ctx.context.set(LEFT_CLUSTER, left);
    const members = after.corosync.nodes.map((n) => n.name).join(", ");
    return advance(
      `${how}; /etc/pve/nodes/${node} removed; '${cluster}' is ${members} (${after.corosync.nodes.length} nodes), quorate`,
    );
  };

  // Not in the member list (an earlier visit removed it): only the leftovers and the read-back.
  if (!listed) return done(`${node} is no longer a member of '${cluster}'`);

  const refused = refusal(facts, node, cluster, via.name);
  if (refused) return fail(refused);
  const isOnline = facts.online.has(node);

  if (isOnline || (await answersSsh(ctx.services, host))) {
    // Asked in this visit chain only: after a Retry the node may have come back, so it is asked again.
    const askedAt = ctx.visit === 1 ? undefined : ctx.context.get<string>(SHUTDOWN_AT);
    if (askedAt === undefined) {
      // Through its API as power does (POST /nodes/{node}/status command=shutdown): Proxmox
      // answers at once and powers off a moment later.
      await (await ctx.services.proxmox()).shutdownNode();
      ctx.context.set(SHUTDOWN_AT, new Date().toISOString());
      ctx.log(`asked ${node} to shut down (POST /nodes/${node}/status command=shutdown)`);
      return poll(2, `waiting for ${node} to go down`);
    }
    if (ctx.elapsedSeconds > DOWN_DEADLINE_SECONDS) {
      return fail(
        `${node} was asked to shut down at ${askedAt} but is still ${isOnline ? `online in '${cluster}' as ${via.name} sees it` : "answering SSH"}: it stays a member. Shut it down by hand, then Retry.`,
      );
    }
    return poll(
      2,
      `waiting for ${node} to go down (${isOnline ? `online to ${via.name}` : "answers SSH"})`,
    );
  }

  // Seen down: offline to the member that stays, and no SSH. Removed from there.
  const removed = await logged(ctx, exec, via.name, delnodeCommand(node));
  if (removed.code !== 0 && !/is not a known host of the cluster/.test(removed.stderr)) {
    return fail(
      `pvecm delnode ${node} on ${via.name} failed (exit ${String(removed.code)}): ${removed.stderr.trim() || removed.stdout.trim()}`,
    );
  }
  return done(`${node} shut down and removed from '${cluster}' on ${via.name} (pvecm delnode)`);
}

/**
 * Goal: the host is no member of a cluster any more (issue 31, item 7). For a host that created
 * or joined a cluster: refused while it holds guests or while the cluster's quorum needs it;
 * otherwise the node is shut down (and seen down: offline to a member that stays, no SSH), removed
 * on that member with `pvecm delnode`, its leftovers in `/etc/pve/nodes/<node>` removed, and read
 * back — the member list without it, the cluster quorate. A retry decides from what the member
 * sees: already removed → only the leftovers and the read-back.
 */
export const leaveCluster: Step<HostServices> = {
  name: "LeaveCluster",
  maxDuration: () => 900,
  async visit(ctx) {
    const host = await ctx.services.host();
    if (!host.clusterName) return alreadyInPlace(ctx, "the host is in no cluster the console made");
    const node = host.nodeName;
    if (!node || !NODE_NAME_RE.test(node))
      return fail(
        `${host.name} has no recorded Proxmox node name: the console cannot tell which member to remove.`,
      );
    const others = await otherMembers(ctx.services.db, host);
    const unreachable: string[] = [];
    for (const via of others) {
      let connected = false;
      try {
        return await withMemberSession(ctx.services.db, via, (exec) => {
          connected = true;
          return decide(ctx, host, node, via, exec);
        });
      } catch (error) {
        // A member that cannot be reached may be one that is down: the next one is asked. What
        // fails once connected is this visit's error (retried by the engine).
        if (connected) throw error;
        unreachable.push(
          `${via.name}: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`,
        );
      }
    }
    if (others.length === 0) {
      // The cluster's last member the console manages: is it the cluster's last node too?
      const own = await ctx.services.exec("cat /etc/pve/corosync.conf", { timeoutMs: 30_000 });
      const conf = own.code === 0 ? parseCorosyncConf(own.stdout) : null;
      if (conf && conf.nodes.length === 1 && conf.nodes[0]!.name === node)
        return alreadyInPlace(
          ctx,
          `${node} is the only node of '${host.clusterName}': there is nothing to leave`,
        );
      return fail(
        `no other member of '${host.clusterName}' is managed by the console (its nodes: ${conf?.nodes.map((n) => n.name).join(", ") ?? "unknown"}): remove ${node} by hand (shut it down, then pvecm delnode ${node} on a member). Nothing was changed.`,
      );
    }
    if (ctx.visit < 3)
      return poll(5, `no member of '${host.clusterName}' answered, attempt ${ctx.visit}`);
    return fail(
      `no member of '${host.clusterName}' that stays could be asked (${unreachable.join("; ")}). Retry when one answers.`,
    );
  },
};
