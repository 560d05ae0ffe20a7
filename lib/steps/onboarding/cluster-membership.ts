import { eq } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { hosts } from "@/lib/db/schema";
import { loadCredentialAuth } from "@/lib/host-access/host-credential";
import { proxmoxClientForHost } from "@/lib/host-access/proxmox-client";
import { advance, fail, type Outcome, type Step, type StepContext } from "@/lib/pipeline/step";
import { ProxmoxCertificateMismatchError } from "@/lib/proxmox/errors";
import { connectSsh, sh, type ExecResult } from "@/lib/ssh";
import { asRoot } from "../remote-job/remote-host";
import { alreadyInPlace } from "@/lib/pipeline/already-in-place";
import type { HostRecord, HostServices } from "./services";
import { withPermanentSshFailures } from "./ssh-failure";

/**
 * CreateCluster and JoinCluster (issue 31): after Proxmox VE is installed and configured, before
 * the console's API token is made — joining replaces the node's `/etc/pve` (pmxcfs takes the
 * cluster's), so a token made before would be gone. Each reads the facts first and changes
 * nothing unless every precondition holds with positive evidence; a retry decides from what is
 * true on the host, never from what an earlier run meant to do. How each maps to `pvecm`:
 * docs/hosts.md, "Clusters".
 */

const MARK = "--clupilot--";

/** One round trip: what membership, the guards and the read-back are decided on. */
const PROBE = [
  `cat /etc/pve/corosync.conf 2>/dev/null; printf '\\n${MARK} corosync %s\\n' "$?"`,
  `uname -n; printf '\\n${MARK} nodename %s\\n' "$?"`,
  `hostname -I; printf '\\n${MARK} addresses %s\\n' "$?"`,
  // Guests anywhere this node's pmxcfs shows (a standalone node shows only its own).
  `ls /etc/pve/nodes/*/qemu-server/*.conf /etc/pve/nodes/*/lxc/*.conf 2>/dev/null | wc -l; printf '\\n${MARK} guests %s\\n' "$?"`,
  `timedatectl show -p NTPSynchronized --value; printf '\\n${MARK} ntp %s\\n' "$?"`,
  `if [ -e /etc/corosync/authkey ]; then echo present; else echo absent; fi; printf '\\n${MARK} authkey %s\\n' "$?"`,
].join("\n");

type Sections = Map<string, { text: string; code: number }>;

function sections(stdout: string): Sections {
  const out: Sections = new Map();
  let buffer: string[] = [];
  for (const line of stdout.split("\n")) {
    const m = new RegExp(`^${MARK} (\\S+) (\\d+)$`).exec(line);
    if (m) {
      out.set(m[1]!, { text: buffer.join("\n").trim(), code: Number(m[2]) });
      buffer = [];
    } else buffer.push(line);
  }
  return out;
}

export type CorosyncFacts = {
  clusterName: string;
  /** `votes`: the node's quorum_votes (1 when the file does not say). */
  nodes: { name: string; nodeid: number; votes: number; ring0Addr: string }[];
};

/** The parts of corosync.conf the steps decide on (PVE::Corosync::parse_conf, enough of it). */
export function parseCorosyncConf(text: string): CorosyncFacts {
  const nodes: CorosyncFacts["nodes"] = [];
  let clusterName = "";
  let current: Record<string, string> | null = null;
  const stack: string[] = [];
  for (const raw of text.split("\n")) {
    const line = raw.replace(/#.*$/, "").trim();
    if (line === "") continue;
    const open = /^(\S+)\s*\{$/.exec(line);
    if (open) {
      stack.push(open[1]!);
      if (open[1] === "node" && stack[stack.length - 2] === "nodelist") current = {};
      continue;
    }
    if (line === "}") {
      const closed = stack.pop();
      if (closed === "node" && current) {
        nodes.push({
          name: current.name ?? "",
          nodeid: Number(current.nodeid ?? 0),
          votes: Number(current.quorum_votes ?? 1),
          ring0Addr: current.ring0_addr ?? "",
        });
        current = null;
      }
      continue;
    }
    const pair = /^([^:\s]+)\s*:\s*(.*)$/.exec(line);
    if (!pair) continue;
    if (current) current[pair[1]!] = pair[2]!;
    else if (stack.length === 1 && stack[0] === "totem" && pair[1] === "cluster_name")
      clusterName = pair[2]!;
  }
  return { clusterName, nodes };
}

export type MembershipFacts = {
  corosync: CorosyncFacts | null;
  nodeName: string;
  addresses: string[];
  guests: number;
  ntpSynchronized: boolean;
  authkey: boolean;
};

async function probe(services: HostServices): Promise<MembershipFacts> {
  const result = await services.exec(PROBE, { timeoutMs: 60_000 });
  const s = sections(result.stdout);
  const need = (name: string) => {
    const section = s.get(name);
    if (!section) throw new Error(`the membership probe printed no ${name} section`);
    return section;
  };
  const corosync = need("corosync");
  const nodename = need("nodename");
  if (nodename.code !== 0 || nodename.text === "") throw new Error("uname -n failed");
  const addresses = need("addresses");
  if (addresses.code !== 0) throw new Error("hostname -I failed");
  const guests = need("guests");
  const ntp = need("ntp");
  return {
    corosync: corosync.code === 0 && corosync.text !== "" ? parseCorosyncConf(corosync.text) : null,
    nodeName: nodename.text.split("\n")[0]!.trim(),
    addresses: addresses.text.split(/\s+/).filter(Boolean),
    guests: Number(guests.text.split("\n").pop() ?? "0") || 0,
    ntpSynchronized: ntp.code === 0 && ntp.text.split("\n")[0]?.trim() === "yes",
    authkey: need("authkey").text === "present",
  };
}

type ClusterStatus = { quorate: boolean; nodes: { name: string; online: boolean }[] };

/** `pvesh get /cluster/status` on the host as root: the node's own API, as pmxcfs answers it. */
async function localClusterStatus(services: HostServices): Promise<ClusterStatus> {
  const result = await services.exec("pvesh get /cluster/status --output-format json", {
    timeoutMs: 60_000,
  });
  if (result.code !== 0) {
    throw new Error(
      `pvesh get /cluster/status failed (exit ${String(result.code)}): ${result.stderr.trim()}`,
    );
  }
  const entries = JSON.parse(result.stdout) as {
    type: string;
    name: string;
    quorate?: number;
    online?: number;
  }[];
  const cluster = entries.find((e) => e.type === "cluster");
  return {
    quorate: cluster?.quorate === 1,
    nodes: entries
      .filter((e) => e.type === "node")
      .map((e) => ({ name: e.name, online: e.online === 1 })),
  };
}

/** Read-back shared by both steps: in the member list, quorate, the node's API answers. */
async function readBack(
  ctx: StepContext<HostServices>,
  facts: MembershipFacts,
  clusterName: string,
): Promise<string | null> {
  if (!facts.corosync) return "the node has no /etc/pve/corosync.conf";
  if (facts.corosync.clusterName !== clusterName)
    return `the node's cluster is '${facts.corosync.clusterName}', not '${clusterName}'`;
  if (!facts.corosync.nodes.some((n) => n.name === facts.nodeName))
    return `${facts.nodeName} is not in the cluster's member list`;
  const status = await localClusterStatus(ctx.services);
  if (!status.quorate) return "the cluster has no quorum";
  if (!status.nodes.some((n) => n.name === facts.nodeName && n.online))
    return `${facts.nodeName} is not online in the cluster's status`;
  return null;
}

function memberList(c: CorosyncFacts): string {
  return c.nodes.map((n) => `${n.name} (${n.ring0Addr})`).join(", ");
}

function lastLines(text: string, count = 6): string {
  return text.trim().split("\n").slice(-count).join("\n");
}

// ---------------------------------------------------------------------------------------------
// CreateCluster

async function createVisit(ctx: StepContext<HostServices>): Promise<Outcome> {
  const host = await ctx.services.host();
  if (host.clusterMode !== "create") return alreadyInPlace(ctx, notAsked(host));
  const name = host.clusterName!;
  const link0 = host.clusterLink0!;
  const facts = await probe(ctx.services);
  if (facts.corosync) {
    if (facts.corosync.clusterName !== name) {
      return fail(
        `${facts.nodeName} is already a member of cluster '${facts.corosync.clusterName}' (${memberList(facts.corosync)}); the console was asked to create cluster '${name}'. Nothing was changed. Take it out of that cluster, or add it to join that cluster instead.`,
      );
    }
    const wrong = await readBack(ctx, facts, name);
    if (wrong) return fail(`cluster '${name}' exists on ${facts.nodeName}, but ${wrong}.`);
    await ctx.services.updateHost({ clusterName: name });
    return alreadyInPlace(ctx, `${facts.nodeName} is a member of cluster '${name}', quorate`);
  }
  if (!facts.addresses.includes(link0)) {
    return fail(
      `link0 ${link0} is not an address of ${facts.nodeName} (it has ${facts.addresses.join(", ") || "none"}). Nothing was changed. Edit the host's cluster link.`,
    );
  }
  if (!facts.ntpSynchronized) {
    return fail(
      `the clock of ${facts.nodeName} is not synchronised (timedatectl: NTPSynchronized is not yes); corosync needs the members' clocks in step. Nothing was changed. Check chrony (chronyc sources), then Retry.`,
    );
  }
  const created = await ctx.services.exec(sh`pvecm create ${name} --link0 ${link0}`, {
    timeoutMs: 120_000,
  });
  if (created.code !== 0) {
    return fail(
      `pvecm create ${name} failed (exit ${String(created.code)}): ${lastLines(created.stderr || created.stdout)}`,
    );
  }
  const after = await probe(ctx.services);
  const wrong = await readBack(ctx, after, name);
  if (wrong) return fail(`pvecm create ${name} reported success, but ${wrong}.`);
  await ctx.services.updateHost({ clusterName: name });
  return advance(`created cluster '${name}' on ${after.nodeName} (link0 ${link0}), quorate`);
}

function notAsked(host: HostRecord): string {
  // Nothing to do is this step's goal holding: a re-onboarding reads as changing nothing.
  return host.clusterMode === "none"
    ? "no cluster asked, the host stays standalone"
    : host.clusterMode === "create"
      ? "no join asked, the host creates its cluster"
      : "no new cluster asked, the host joins one";
}

export const createCluster: Step<HostServices> = {
  name: "CreateCluster",
  maxDuration: () => 600,
  visit: (ctx) => withPermanentSshFailures(() => createVisit(ctx)),
};

// ---------------------------------------------------------------------------------------------
// JoinCluster

/** A command on the member over SSH, with the member's pinned host key and stored login. */
async function onMember(db: Database, member: HostRecord, command: string) {
  return withMemberSession(db, member, (exec) => exec(command));
}

/**
 * Commands on another host the console manages (a member of the host's cluster) over one SSH
 * session, with that host's pinned host key and stored login; each as root (`sudo -n` for
 * another login user).
 */
export async function withMemberSession<T>(
  db: Database,
  member: HostRecord,
  work: (exec: (command: string, timeoutMs?: number) => Promise<ExecResult>) => Promise<T>,
): Promise<T> {
  const session = await connectSsh({
    host: member.address,
    port: member.sshPort,
    username: member.sshUser,
    auth: await loadCredentialAuth(db, member.credentialId),
    pinnedHostKey: member.hostKeySha256,
  });
  try {
    return await work((command, timeoutMs = 30_000) =>
      session.exec(asRoot(member.sshUser, command), { timeoutMs }),
    );
  } finally {
    session.close();
  }
}

async function joinVisit(ctx: StepContext<HostServices>): Promise<Outcome> {
  const host = await ctx.services.host();
  if (host.clusterMode !== "join") return alreadyInPlace(ctx, notAsked(host));
  const link0 = host.clusterLink0!;
  const db = ctx.services.db;
  if (host.clusterMemberHostId === null) {
    return fail("the host to join through was removed from the console; add this host again.");
  }
  const [member] = await db.select().from(hosts).where(eq(hosts.id, host.clusterMemberHostId));
  if (!member || member.retiredAt !== null) {
    return fail("the host to join through is gone or retired; add this host again with another.");
  }
  if (member.hostKeySha256 === null || member.apiCertSha256 === null) {
    return fail(`${member.name} has no pinned SSH host key or API certificate: onboard it first.`);
  }

  // The member's quorum over its pinned certificate and the console's token (a certificate
  // other than the pinned one ends it here), its member list from its corosync.conf over SSH
  // with its pinned host key (join info would fail on a list holding a half-joined node: it
  // has no certificate in the cluster yet, as on Proxmox).
  let memberQuorate: boolean;
  try {
    const client = await proxmoxClientForHost(db, member);
    const status = await client.clusterStatus();
    memberQuorate = status.some((e) => e.type === "cluster" && e.quorate === 1);
  } catch (error) {
    if (error instanceof ProxmoxCertificateMismatchError) {
      return fail(
        `${member.name}'s API does not present the certificate the console pinned for it (${member.apiCertSha256}); the join trusts only that one. Nothing was changed.`,
      );
    }
    throw error;
  }
  const memberConf = await onMember(db, member, "cat /etc/pve/corosync.conf");
  if (memberConf.code !== 0) {
    return fail(
      `${member.name} is in no cluster (no /etc/pve/corosync.conf): there is nothing to join. Nothing was changed.`,
    );
  }
  const memberCluster = parseCorosyncConf(memberConf.stdout);
  const clusterName = memberCluster.clusterName;
  const info = {
    nodelist: memberCluster.nodes.map((n) => ({ name: n.name, ring0_addr: n.ring0Addr })),
  };
  const memberNode = info.nodelist.find((n) => n.name === member.nodeName);
  const facts = await probe(ctx.services);

  if (facts.corosync) {
    if (facts.corosync.clusterName !== clusterName) {
      return fail(
        `${facts.nodeName} is already a member of cluster '${facts.corosync.clusterName}' (${memberList(facts.corosync)}); it cannot join '${clusterName}'. Nothing was changed.`,
      );
    }
    const wrong = await readBack(ctx, facts, clusterName);
    if (wrong) return fail(`${facts.nodeName} is in cluster '${clusterName}', but ${wrong}.`);
    await ctx.services.updateHost({ clusterName });
    return alreadyInPlace(
      ctx,
      `${facts.nodeName} is a member of cluster '${clusterName}', quorate`,
    );
  }

  const refusals: string[] = [];
  if (!memberQuorate)
    refusals.push(`cluster '${clusterName}' has no quorum (as ${member.name} sees it)`);
  if (facts.guests > 0)
    refusals.push(
      `${facts.nodeName} holds ${facts.guests} guest(s); Proxmox joins only a node without guests (VMIDs must be unique in the cluster)`,
    );
  if (!facts.addresses.includes(link0))
    refusals.push(
      `link0 ${link0} is not an address of ${facts.nodeName} (it has ${facts.addresses.join(", ") || "none"})`,
    );
  const sameName = info.nodelist.find((n) => n.name === facts.nodeName);
  const sameAddress = info.nodelist.find(
    (n) => n.name !== facts.nodeName && n.ring0_addr === link0,
  );
  if (sameAddress)
    refusals.push(
      `address ${link0} is already used by ${sameAddress.name} in cluster '${clusterName}'`,
    );
  // Our name in the list with our link0 and no cluster config here: a join of this node that
  // died half-way (the member added it, the node never took the cluster's configuration).
  const halfJoined = sameName !== undefined && sameName.ring0_addr === link0;
  if (sameName && !halfJoined)
    refusals.push(
      `a node named ${facts.nodeName} is already in cluster '${clusterName}' (address ${sameName.ring0_addr ?? "?"}); rename this host or remove that node (pvecm delnode ${facts.nodeName} on a member)`,
    );
  if (facts.authkey && !halfJoined)
    refusals.push(
      `${facts.nodeName} has /etc/corosync/authkey but no /etc/pve/corosync.conf: left over from an earlier cluster; remove it by hand if that cluster is gone`,
    );
  if (!facts.ntpSynchronized)
    refusals.push(
      `the clock of ${facts.nodeName} is not synchronised (timedatectl NTPSynchronized)`,
    );
  if (refusals.length === 0) {
    const memberNtp = await onMember(db, member, "timedatectl show -p NTPSynchronized --value");
    if (memberNtp.code !== 0 || memberNtp.stdout.trim() !== "yes")
      refusals.push(
        `the clock of ${member.name} is not synchronised (timedatectl NTPSynchronized)`,
      );
  }
  if (refusals.length > 0) {
    return fail(
      `not joining cluster '${clusterName}' through ${member.name}: ${refusals.join("; ")}. Nothing was changed.`,
    );
  }

  const auth = await loadCredentialAuth(db, member.credentialId);
  if (auth.kind !== "password" || member.sshUser !== "root") {
    return fail(
      `joining logs in to ${member.name} as root with its password (pvecm add); the console has no root password for it. Nothing was changed.`,
    );
  }
  // The member as the joining node reaches it: its address in the cluster.
  const memberAddress = memberNode?.ring0_addr ?? member.address;
  if (halfJoined) {
    ctx.log(
      `${facts.nodeName} is already in the member list of '${clusterName}' with link0 ${link0}, but has no cluster configuration: an earlier join died half-way; finishing it with pvecm add --force`,
    );
  }
  const joined = await ctx.services.exec(
    sh`pvecm add ${memberAddress} --fingerprint ${member.apiCertSha256} --link0 ${link0}` +
      (halfJoined ? " --force" : ""),
    { timeoutMs: 180_000, stdin: `${auth.password}\n` },
  );
  if (joined.code !== 0) {
    const output = `${joined.stdout}\n${joined.stderr}`;
    if (/Join request OK/.test(joined.stdout)) {
      return fail(
        `the join of ${facts.nodeName} died half-way: ${member.name} added it to cluster '${clusterName}', but it did not take the cluster's configuration (${lastLines(joined.stderr || joined.stdout, 2)}). Retry finishes it (pvecm add --force); or remove it on a member with pvecm delnode ${facts.nodeName}.`,
      );
    }
    return fail(
      `pvecm add ${memberAddress} failed (exit ${String(joined.code)}), nothing was changed: ${lastLines(output)}`,
    );
  }
  const after = await probe(ctx.services);
  const wrong = await readBack(ctx, after, clusterName);
  if (wrong) return fail(`pvecm add reported success, but ${wrong}.`);
  await ctx.services.updateHost({ clusterName });
  return advance(
    `${after.nodeName} joined cluster '${clusterName}' through ${member.name} (link0 ${link0}), quorate`,
  );
}

export const joinCluster: Step<HostServices> = {
  name: "JoinCluster",
  maxDuration: () => 900,
  visit: (ctx) => withPermanentSshFailures(() => joinVisit(ctx)),
};
