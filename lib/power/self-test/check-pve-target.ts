import {
  CONSOLE_ROLE,
  missingPrivileges,
  type RequiredPrivilege,
} from "@/lib/proxmox/console-identity";
import { eq } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { powerClusterMemberships, powerClusters } from "@/lib/db/schema";
import { safeErrorSummary } from "@/lib/errors";
import { HostApiNotReadyError, proxmoxClientForHost } from "@/lib/host-access/proxmox-client";
import type { ProxmoxClient } from "@/lib/proxmox/client";
import { ProxmoxPermissionError } from "@/lib/proxmox/errors";
import type { TClusterStatusEntry } from "@/lib/proxmox/schemas";
import { sh } from "@/lib/ssh";
import { judgeNodeName } from "@/lib/steps/onboarding/verify-proxmox-api";
import type { PveEndpoint, TargetRecord } from "../targets/load-targets";
import { apiBaseUrl } from "@/lib/proxmox/pinned-https";
import { apiFailure } from "./failure";
import { consolidateSettingsOf } from "../clusters/load-cluster-groups";
import { requiredPowerPrivileges } from "./required-privileges";
import { checksOf, type SelfTestCheck, type SubjectCheck } from "./verdict";

/**
 * A protected Proxmox VE node, asked with the console's own token over its pinned certificate:
 * the token works, the node name is exactly Proxmox's, the address answers as that node, and
 * the token holds every privilege the node's shutdown path needs.
 */
export async function checkPveTarget(
  db: Database,
  target: TargetRecord,
  endpoint: PveEndpoint,
  options: { timeoutMs: number },
): Promise<SelfTestCheck[]> {
  const check = checksOf(target);
  const tokenCheck = check("token", "the API answers with the console's token");
  const nameCheck = check("node-name", "node name exactly as Proxmox knows it");
  const identityCheck = check("node-identity", "the API address answers as this node");
  const privilegeCheck = check("privileges", "the token holds the privileges power needs");
  const where = `${apiBaseUrl(endpoint.address, endpoint.apiPort)} (${target.name})`;

  let client: ProxmoxClient;
  let version: string;
  try {
    client = await proxmoxClientForHost(db, endpoint, { timeoutMs: options.timeoutMs });
    version = (await client.version()).version;
  } catch (error) {
    const failure =
      error instanceof HostApiNotReadyError
        ? {
            verdict: "failed" as const,
            reason: error.message,
            next: "Finish the host's onboarding.",
          }
        : apiFailure(error, where);
    const unasked = `Not asked: ${where} did not answer with the console's token (see its token check).`;
    return [
      tokenCheck(failure.verdict, failure.reason, failure.next),
      nameCheck("could-not-check", unasked, "Fix the token check first."),
      identityCheck("could-not-check", unasked, "Fix the token check first."),
      privilegeCheck("could-not-check", unasked, "Fix the token check first."),
    ];
  }
  const checks = [
    tokenCheck(
      "ok",
      `Proxmox VE ${version} answers at ${where} with token ${endpoint.apiTokenId}.`,
    ),
  ];

  const membership = await whoAnswers(client);
  checks.push(
    ...judgeIdentity(
      endpoint.nodeName,
      endpoint.apiTokenId,
      where,
      membership,
      nameCheck,
      identityCheck,
    ),
  );

  const cluster = membership.kind === "answered" ? membership.clusterName : null;
  const { ceph, migrate } =
    cluster === null
      ? { ceph: false, migrate: false }
      : await clusterFeatures(db, endpoint.hostId, cluster);
  const required = requiredPowerPrivileges(endpoint.nodeName, {
    cluster: cluster !== null,
    ceph,
    migrate,
  });
  checks.push(
    await judgePrivileges(client, endpoint.apiTokenId, required, privilegeCheck, {
      clusterUnknown: membership.kind === "unknown" ? membership.why : null,
    }),
  );
  return checks;
}

type Membership =
  | {
      kind: "answered";
      /** Every node Proxmox names, and the one that answered (null: it did not say). */
      names: string[];
      local: string | null;
      clusterName: string | null;
    }
  | { kind: "unknown"; why: string; names: string[] | null };

/**
 * Which node answers at the address. `GET /cluster/status` marks it `local`; when the token may
 * not read it, a standalone node's `GET /nodes` (which lists only itself) says it too.
 */
async function whoAnswers(client: ProxmoxClient): Promise<Membership> {
  let status: TClusterStatusEntry[];
  try {
    status = await client.clusterStatus();
  } catch (error) {
    const why = `GET /cluster/status was not answered: ${safeErrorSummary(error)}`;
    try {
      const names = (await client.nodes()).map((n) => n.node);
      if (names.length === 1) {
        return { kind: "answered", names, local: names[0]!, clusterName: null };
      }
      return { kind: "unknown", why, names };
    } catch {
      return { kind: "unknown", why, names: null };
    }
  }
  const nodes = status.filter((entry) => entry.type === "node");
  return {
    kind: "answered",
    names: nodes.map((n) => n.name),
    local: nodes.find((n) => n.local === 1)?.name ?? null,
    clusterName: status.find((entry) => entry.type === "cluster")?.name ?? null,
  };
}

function judgeIdentity(
  configured: string,
  tokenId: string,
  where: string,
  membership: Membership,
  nameCheck: SubjectCheck,
  identityCheck: SubjectCheck,
): SelfTestCheck[] {
  const grantAudit = `Grant the token Sys.Audit on / (${sh`pveum acl modify / --tokens ${tokenId} --roles ${CONSOLE_ROLE}`}), or run the host's onboarding again.`;
  const checks: SelfTestCheck[] = [];
  if (membership.names === null) {
    checks.push(
      nameCheck(
        "could-not-check",
        `${membership.kind === "unknown" ? membership.why : ""}; GET /nodes was not answered either.`,
        grantAudit,
      ),
    );
  } else {
    const wrong = judgeNodeName(configured, membership.names);
    checks.push(
      wrong?.kind === "fail"
        ? nameCheck(
            "failed",
            `${wrong.reason}.`,
            "Correct the node name, then run the self-test again.",
          )
        : nameCheck("ok", `Proxmox knows the node as "${configured}", exactly.`),
    );
  }
  const local = membership.kind === "answered" ? membership.local : null;
  if (local === null) {
    const why =
      membership.kind === "unknown" ? membership.why : "its answer marked no node as local";
    checks.push(
      identityCheck(
        "could-not-check",
        `Which node answers at ${where} is not known: ${why}.`,
        grantAudit,
      ),
    );
    return checks;
  }
  const sameNode = local.toLowerCase() === (configured.split(".")[0] ?? configured).toLowerCase();
  checks.push(
    sameNode
      ? identityCheck("ok", `${where} answers as node ${local}.`)
      : identityCheck(
          "failed",
          `${where} answers as node ${local}, not ${configured}: the console would send ${configured}'s shutdown to ${local}, which forwards it only while it is up itself — and the order of the shutdown is no longer the one planned.`,
          `Correct the address of ${configured} (each node is called at its own address), then run the self-test again.`,
        ),
  );
  return checks;
}

/**
 * What the cluster's policy needs of its members: Ceph flags, migrating (consolidate). The
 * cluster is the one the host was found a member of (two clusters may share a name); a host not
 * judged yet goes by the name, where only one cluster has it.
 */
async function clusterFeatures(
  db: Database,
  hostId: string,
  cluster: string,
): Promise<{ ceph: boolean; migrate: boolean }> {
  const columns = {
    hyperConverged: powerClusters.hyperConverged,
    policy: powerClusters.policy,
    consolidate: powerClusters.consolidate,
  };
  const [member] = await db
    .select(columns)
    .from(powerClusterMemberships)
    .innerJoin(powerClusters, eq(powerClusters.id, powerClusterMemberships.clusterId))
    .where(eq(powerClusterMemberships.hostId, hostId));
  const named = member
    ? []
    : await db.select(columns).from(powerClusters).where(eq(powerClusters.name, cluster));
  const row = member ?? (named.length === 1 ? named[0] : undefined);
  return {
    ceph: row?.hyperConverged ?? false,
    migrate:
      row?.policy === "consolidate" && consolidateSettingsOf(row.consolidate).mode === "migrate",
  };
}

async function judgePrivileges(
  client: ProxmoxClient,
  tokenId: string,
  required: readonly RequiredPrivilege[],
  privilegeCheck: SubjectCheck,
  context: { clusterUnknown: string | null },
): Promise<SelfTestCheck> {
  const paths = [...new Set(required.map((r) => r.path))];
  let answers: Map<string, Record<string, Record<string, number>>>;
  try {
    answers = new Map(
      await Promise.all(paths.map(async (p) => [p, await client.permissions(p)] as const)),
    );
  } catch (error) {
    return privilegeCheck(
      "could-not-check",
      `GET /access/permissions was not answered: ${safeErrorSummary(error)}.`,
      "Check the node's API, then run the self-test again.",
    );
  }
  const missing = missingPrivileges(required, answers);
  const clusterCaveat = context.clusterUnknown
    ? ` Whether the node is in a cluster is not known (${context.clusterUnknown}), so only the standalone privileges were checked.`
    : "";
  if (missing.length === 0) {
    return privilegeCheck(
      context.clusterUnknown ? "warning" : "ok",
      `Token ${tokenId} holds ${required.map((r) => `${r.privilege} on ${r.path}`).join(", ")}.${clusterCaveat}`,
      context.clusterUnknown ? "Grant the token Sys.Audit on / so the cluster can be read." : null,
    );
  }
  const user = tokenId.split("!")[0]!;
  const list = missing.map((m) => `${m.privilege} on ${m.path} (${m.purpose})`).join("; ");
  const grant = `${sh`pveum acl modify / --tokens ${tokenId} --roles ${CONSOLE_ROLE}`}`;
  let separation: string;
  try {
    const userAnswers = new Map(
      await Promise.all(
        [...new Set(missing.map((m) => m.path))].map(
          async (p) => [p, await client.permissions(p, user)] as const,
        ),
      ),
    );
    const userLacks = new Set(missingPrivileges(missing, userAnswers));
    const userHas = missing.filter((m) => !userLacks.has(m));
    separation =
      userHas.length > 0
        ? ` Its user ${user} holds ${userHas.map((m) => m.privilege).join(", ")}, the token does not: the privilege-separation trap — a token created with privilege separation has only its own ACLs, not its user's.`
        : ` Its user ${user} lacks them too.`;
  } catch (error) {
    const refused = error instanceof ProxmoxPermissionError;
    separation = ` Its user's privileges could not be compared (${refused ? "the token may not read them" : safeErrorSummary(error)}); if the user holds them, it is the privilege-separation trap: a token created with privilege separation has only its own ACLs, not its user's.`;
  }
  return privilegeCheck(
    "failed",
    `Token ${tokenId} lacks ${list}.${separation}${clusterCaveat}`,
    `Grant the console's role to the token and its user (${grant}; the same with --users ${user}) or run the host's onboarding again, then run the self-test again.`,
  );
}
