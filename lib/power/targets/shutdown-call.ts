import { eq } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { credentials } from "@/lib/db/schema";
import { proxmoxClientForHost } from "@/lib/host-access/proxmox-client";
import { pveShutdownPath } from "@/lib/proxmox/client";
import { PBS_SHUTDOWN_PATH, PbsClient } from "@/lib/proxmox/pbs-client";
import { apiBaseUrl, probeApi } from "@/lib/proxmox/pinned-https";
import { unseal } from "@/lib/secrets/seal";
import type { PbsEndpoint, PveEndpoint } from "./load-targets";

/**
 * The one shutdown call per target: described exactly (what dry-run logs is what armed sends),
 * sent to the target's own API address with its token and pinned certificate, under a deadline.
 */

type Endpoint = PveEndpoint | PbsEndpoint;

export type ShutdownRequest = {
  method: "POST";
  url: string;
  form: { command: "shutdown" };
  /** The header as sent, its secret masked. */
  authorization: string;
  /** `POST https://10.0.0.5:8006/api2/json/nodes/pve1/status command=shutdown`. */
  line: string;
};

function baseUrlOf(endpoint: Endpoint): string {
  return endpoint.kind === "pve-node"
    ? apiBaseUrl(endpoint.address, endpoint.apiPort)
    : apiBaseUrl(endpoint.address, endpoint.port);
}

export function describeShutdown(endpoint: Endpoint): ShutdownRequest {
  const path =
    endpoint.kind === "pve-node" ? pveShutdownPath(endpoint.nodeName) : PBS_SHUTDOWN_PATH;
  const url = `${baseUrlOf(endpoint)}/api2/json${path}`;
  const authorization =
    endpoint.kind === "pve-node"
      ? `PVEAPIToken=${endpoint.apiTokenId}=***`
      : `PBSAPIToken=${endpoint.tokenId}:***`;
  return {
    method: "POST",
    url,
    form: { command: "shutdown" },
    authorization,
    line: `POST ${url} command=shutdown`,
  };
}

/**
 * Sends the shutdown. Resolves when the target accepted it; throws with a one-line reason
 * otherwise (refused token, missing privilege, unreachable, no answer within the deadline).
 */
export async function sendShutdown(
  db: Database,
  endpoint: Endpoint,
  options: { timeoutMs: number; onSecret?: (secret: string) => void },
): Promise<void> {
  if (endpoint.kind === "pve-node") {
    const client = await proxmoxClientForHost(db, endpoint, options);
    await client.shutdownNode();
    return;
  }
  await (await pbsClientFor(db, endpoint, options)).shutdown();
}

/** A backup server's API client with its token's secret unsealed (`onSecret` gets it to mask). */
export async function pbsClientFor(
  db: Database,
  endpoint: PbsEndpoint,
  options: { timeoutMs: number; onSecret?: (secret: string) => void },
): Promise<PbsClient> {
  const [credential] = await db
    .select({ sealed: credentials.sealed })
    .from(credentials)
    .where(eq(credentials.id, endpoint.tokenCredentialId));
  if (!credential)
    throw new Error("the PBS token's secret is missing; enter it again on the target");
  const secret = unseal(credential.sealed);
  options.onSecret?.(secret);
  return new PbsClient({
    baseUrl: baseUrlOf(endpoint),
    tokenId: endpoint.tokenId,
    tokenSecret: secret,
    certSha256: endpoint.certSha256,
    timeoutMs: options.timeoutMs,
  });
}

/** Whether the target's API still answers at all (see probeApi). */
export function probeTarget(endpoint: Endpoint, timeoutMs: number) {
  return probeApi({
    baseUrl: baseUrlOf(endpoint),
    certSha256: endpoint.kind === "pve-node" ? endpoint.apiCertSha256 : endpoint.certSha256,
    timeoutMs,
  });
}
