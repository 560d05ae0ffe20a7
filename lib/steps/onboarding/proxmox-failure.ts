import { HostApiNotReadyError } from "@/lib/host-access/proxmox-client";
import { fail, type Outcome } from "@/lib/pipeline/step";
import {
  ProxmoxAuthError,
  ProxmoxCertificateMismatchError,
  ProxmoxPermissionError,
} from "@/lib/proxmox/errors";

/**
 * Proxmox API failures that waiting cannot fix fail the step at once, each with what to do:
 * a certificate that is not the pinned one (the token is never sent), a refused token (401),
 * a missing privilege (403), a host that lacks what the client needs. Everything else — network, timeout, 5xx, an answer we could not
 * parse — means "could not ask": it is thrown and retried with backoff, never read as an answer.
 */
export async function withPermanentProxmoxFailures(
  visit: () => Promise<Outcome>,
): Promise<Outcome> {
  try {
    return await visit();
  } catch (error) {
    // The host lacks what the API client needs (address, token or pin not yet recorded).
    if (error instanceof HostApiNotReadyError) return fail(error.message);
    if (error instanceof ProxmoxCertificateMismatchError) return fail(error.message);
    if (error instanceof ProxmoxAuthError) {
      return fail(
        `${error.message}: the token was deleted or its secret changed on the host; ` +
          "start the onboarding again so CreateApiToken rotates it",
      );
    }
    if (error instanceof ProxmoxPermissionError) {
      return fail(
        `${error.message}; the console's role lacks a privilege — start the onboarding again so ` +
          "CreateApiToken restores the role, or grant it on the host",
      );
    }
    throw error;
  }
}
