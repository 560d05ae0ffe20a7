import { eq } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { credentials } from "@/lib/db/schema";
import { ProxmoxClient, pveShutdownPath } from "@/lib/proxmox/client";
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
  const secret = await tokenSecretOf(db, endpoint);
  options.onSecret?.(secret);
  await sendShutdownWithSecret(endpoint, secret, options);
}

/** The id of the credential that holds the target's token secret. */
export function tokenCredentialOf(endpoint: Endpoint): string {
  return endpoint.kind === "pve-node" ? endpoint.apiTokenCredentialId : endpoint.tokenCredentialId;
}

/** The target's token secret, unsealed. */
export async function tokenSecretOf(
  db: Pick<Database, "select">,
  endpoint: Endpoint,
): Promise<string> {
  const [credential] = await db
    .select({ sealed: credentials.sealed })
    .from(credentials)
    .where(eq(credentials.id, tokenCredentialOf(endpoint)));
  if (!credential) {
    throw new Error(
      endpoint.kind === "pve-node"
        ? "the host's API token secret is missing; retry CreateApiToken"
        : "the PBS token's secret is missing; enter it again on the target",
    );
  }
  return unseal(credential.sealed);
}

/**
 * Sends the shutdown with a secret already at hand: the power monitor's standby plan holds them
 * so that a shutdown needs no database (lib/power/monitor/offline-shutdown.ts).
 */
export async function sendShutdownWithSecret(
  endpoint: Endpoint,
  secret: string,
  options: { timeoutMs: number },
): Promise<void> {
  if (endpoint.kind === "pve-node") {
    await new ProxmoxClient({
      baseUrl: baseUrlOf(endpoint),
      node: endpoint.nodeName,
      tokenId: endpoint.apiTokenId,
      tokenSecret: secret,
      certSha256: endpoint.apiCertSha256,
      timeoutMs: options.timeoutMs,
    }).shutdownNode();
    return;
  }
  await new PbsClient({
    baseUrl: baseUrlOf(endpoint),
    tokenId: endpoint.tokenId,
    tokenSecret: secret,
    certSha256: endpoint.certSha256,
    timeoutMs: options.timeoutMs,
  }).shutdown();
}

/** A backup server's API client with its token's secret unsealed (`onSecret` gets it to mask). */
export async function pbsClientFor(
  db: Database,
  endpoint: PbsEndpoint,
  options: { timeoutMs: number; onSecret?: (secret: string) => void },
): Promise<PbsClient> {
  const secret = await tokenSecretOf(db, endpoint);
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
