import { fail, type Outcome, type Step } from "@/lib/pipeline/step";
import {
  CONSOLE_ROLE,
  missingPrivileges,
  requiredPrivileges,
  type RequiredPrivilege,
} from "@/lib/proxmox/console-identity";
import { sh } from "@/lib/ssh";
import { withPermanentProxmoxFailures } from "./proxmox-failure";
import type { HostServices } from "./services";
import { alreadyInPlace } from "../../pipeline/already-in-place";

/**
 * The node name the console uses in every `/nodes/{node}` path must be one Proxmox lists,
 * exactly: Proxmox compares it case-sensitively and rejects a name with a domain suffix. Null
 * when it matches; otherwise the failure, saying which of the near misses it is.
 */
export function judgeNodeName(configured: string, listed: readonly string[]): Outcome | null {
  if (listed.includes(configured)) return null;
  const known = listed.length > 0 ? listed.map((n) => `"${n}"`).join(", ") : "none";
  const fix =
    "The console reads the node name from the host's hostname (CreateApiToken); if the host " +
    "was renamed after Proxmox was installed, rename it back or follow Proxmox's node rename " +
    "procedure, then start the onboarding again";
  const caseOnly = listed.find((n) => n.toLowerCase() === configured.toLowerCase());
  if (caseOnly) {
    return fail(
      `node name differs in case: the console has "${configured}", Proxmox calls the node "${caseOnly}" and compares exactly. ${fix}`,
    );
  }
  const short = configured.split(".")[0] ?? configured;
  if (short !== configured && listed.includes(short)) {
    return fail(
      `node name "${configured}" carries a domain suffix; Proxmox calls the node "${short}" (node names never contain a dot). ${fix}`,
    );
  }
  return fail(`Proxmox knows no node "${configured}" (nodes: ${known}). ${fix}`);
}

/** The failure for missing privileges: each named with what it is for, and the fix. */
export function missingPrivilegesReason(tokenId: string, missing: readonly RequiredPrivilege[]) {
  const list = missing.map((m) => `${m.privilege} on ${m.path} (${m.purpose})`).join("; ");
  return (
    `the API token ${tokenId} lacks ${list}. A token with privilege separation holds only its ` +
    `own ACLs, intersected with its user's: grant the role to the token and its user on / ` +
    `(${sh`pveum acl modify / --tokens ${tokenId} --roles ${CONSOLE_ROLE}`}; ` +
    `the same with --users ${tokenId.split("!")[0]}) or start the onboarding again so ` +
    "CreateApiToken restores them, then retry"
  );
}

/**
 * Goal: the API answers with the console's token over the pinned certificate, the recorded node
 * name is exactly one Proxmox lists, and the token holds every privilege the console needs.
 * A wrong certificate, a refused token or a missing privilege fails with what to do; an API
 * that cannot be asked is thrown (retried), never taken for an answer.
 */
export const verifyProxmoxApi: Step<HostServices> = {
  name: "VerifyProxmoxApi",
  maxDuration: () => 300,
  visit: (ctx) =>
    withPermanentProxmoxFailures(async () => {
      const host = await ctx.services.host();
      const client = await ctx.services.proxmox();
      const version = await client.version();
      const nodes = await client.nodes();
      const nodeVerdict = judgeNodeName(
        host.nodeName!,
        nodes.map((n) => n.node),
      );
      if (nodeVerdict) return nodeVerdict;

      const required = requiredPrivileges(host.nodeName!);
      const answers = new Map<string, Record<string, Record<string, number>>>();
      for (const path of new Set(required.map((r) => r.path))) {
        answers.set(path, await client.permissions(path));
      }
      const missing = missingPrivileges(required, answers);
      if (missing.length > 0) return fail(missingPrivilegesReason(host.apiTokenId!, missing));

      ctx.log(
        `Proxmox VE ${version.version} answers on node ${host.nodeName}; token ${host.apiTokenId} holds ${required.map((r) => r.privilege).join(", ")}`,
      );
      return alreadyInPlace(
        ctx,
        `Proxmox VE ${version.version} answers on node ${host.nodeName} with the console's token`,
      );
    }),
};
