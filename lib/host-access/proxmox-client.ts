import "server-only";
import { eq } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { credentials, type hosts } from "@/lib/db/schema";
import { ProxmoxClient } from "@/lib/proxmox/client";
import { apiBaseUrl } from "@/lib/proxmox/pinned-https";
import { unseal } from "@/lib/secrets/seal";

/** A hosts row, or anything that carries its API fields (a power target's endpoint does). */
type HostApiRecord = Pick<
  typeof hosts.$inferSelect,
  "address" | "apiPort" | "nodeName" | "apiCertSha256" | "apiTokenId" | "apiTokenCredentialId"
>;

/** The host has no API pin or token yet: nothing to ask with (not an answer about the host). */
export class HostApiNotReadyError extends Error {
  override name = "HostApiNotReadyError";
}

/**
 * THE way the console reaches a host's Proxmox API: its address and API port, the certificate
 * pinned over SSH (CreateApiToken), the console's token with its unsealed secret. Used by the
 * onboarding steps (lib/steps/onboarding/services.ts) and the periodic VmTemplateCheck alike.
 * `onSecret` receives the plaintext so the caller can mask it in its logs.
 */
export async function proxmoxClientForHost(
  db: Database,
  record: HostApiRecord,
  options: { onSecret?: (secret: string) => void; timeoutMs?: number } = {},
): Promise<ProxmoxClient> {
  if (
    !record.nodeName ||
    !record.apiCertSha256 ||
    !record.apiTokenId ||
    !record.apiTokenCredentialId
  ) {
    throw new HostApiNotReadyError(
      "the host has no Proxmox API token or certificate pin yet; CreateApiToken must have run first",
    );
  }
  const [credential] = await db
    .select()
    .from(credentials)
    .where(eq(credentials.id, record.apiTokenCredentialId));
  if (!credential)
    throw new HostApiNotReadyError("the host's API token secret is missing; retry CreateApiToken");
  const secret = unseal(credential.sealed);
  options.onSecret?.(secret);
  return new ProxmoxClient({
    baseUrl: apiBaseUrl(record.address, record.apiPort),
    node: record.nodeName,
    tokenId: record.apiTokenId,
    tokenSecret: secret,
    certSha256: record.apiCertSha256,
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
  });
}
