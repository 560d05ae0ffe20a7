import { missingPrivileges } from "@/lib/proxmox/console-identity";
import type { Database } from "@/lib/db/client";
import { safeErrorSummary } from "@/lib/errors";
import type { PbsClient } from "@/lib/proxmox/pbs-client";
import type { PbsEndpoint, TargetRecord } from "../targets/load-targets";
import { apiBaseUrl } from "@/lib/proxmox/pinned-https";
import { pbsClientFor } from "../targets/shutdown-call";
import { apiFailure } from "./failure";
import { PBS_POWER_PRIVILEGE } from "./required-privileges";
import { checksOf, type SelfTestCheck } from "./verdict";

/**
 * A protected Proxmox Backup Server: its token works (`GET /version`) and holds
 * Sys.PowerManagement on /system/status. PBS intersects a token's ACLs with its user's, so
 * both need it (the documented setup grants Admin on /system/status to each).
 */
export async function checkPbsTarget(
  db: Database,
  target: TargetRecord,
  endpoint: PbsEndpoint,
  options: { timeoutMs: number },
): Promise<SelfTestCheck[]> {
  const check = checksOf(target);
  const tokenCheck = check("token", "the API answers with the console's token");
  const privilegeCheck = check("privileges", "the token may shut the backup server down");
  const where = `${apiBaseUrl(endpoint.address, endpoint.port)} (${target.name})`;
  let client: PbsClient;
  let version: string;
  try {
    client = await pbsClientFor(db, endpoint, { timeoutMs: options.timeoutMs });
    version = (await client.version()).version;
  } catch (error) {
    const failure = apiFailure(error, where);
    return [
      tokenCheck(failure.verdict, failure.reason, failure.next),
      privilegeCheck(
        "could-not-check",
        `Not asked: ${where} did not answer with the console's token (see its token check).`,
        "Fix the token check first.",
      ),
    ];
  }
  const { privilege, path, purpose } = PBS_POWER_PRIVILEGE;
  const checks = [
    tokenCheck(
      "ok",
      `Proxmox Backup Server ${version} answers at ${where} with token ${endpoint.tokenId}.`,
    ),
  ];
  try {
    const answer = await client.permissions(path);
    const missing = missingPrivileges([PBS_POWER_PRIVILEGE], new Map([[path, answer]]));
    checks.push(
      missing.length === 0
        ? privilegeCheck("ok", `Token ${endpoint.tokenId} holds ${privilege} on ${path}.`)
        : privilegeCheck(
            "failed",
            `Token ${endpoint.tokenId} lacks ${privilege} on ${path} (${purpose}). PBS gives a token only what both it and its user hold.`,
            `Grant the Admin role on ${path} to the token and to its user (PBS has no narrower role with ${privilege}), then run the self-test again.`,
          ),
    );
  } catch (error) {
    checks.push(
      privilegeCheck(
        "could-not-check",
        `GET /access/permissions?path=${path} was not answered: ${safeErrorSummary(error)}.`,
        "Check the backup server's API, then run the self-test again.",
      ),
    );
  }
  return checks;
}
