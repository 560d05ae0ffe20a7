/**
 * "Not there" and "could not ask" must never look alike: a false "absent" makes BuildVmTemplate
 * destroy and rebuild a VMID. Every failure to get a clean answer is a ProxmoxUnavailableError
 * (or a more specific subclass); only a successful answer can say something is absent.
 */
export class ProxmoxError extends Error {
  override name = "ProxmoxError";
}

/** Network, TLS, timeout, 5xx, or an answer we could not parse: we do not know. */
export class ProxmoxUnavailableError extends ProxmoxError {
  override name = "ProxmoxUnavailableError";
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

export class ProxmoxCertificateMismatchError extends ProxmoxError {
  override name = "ProxmoxCertificateMismatchError";
  constructor(
    readonly url: string,
    readonly pinned: string,
    readonly offered: string,
  ) {
    super(
      `TLS certificate of ${url} changed: pinned ${pinned}, offered ${offered}. The console refused to send its API token. ` +
        "If Proxmox's certificate was renewed, update the pin on the host page; otherwise treat this as a possible interception.",
    );
  }
}

export class ProxmoxAuthError extends ProxmoxError {
  override name = "ProxmoxAuthError";
}

export class ProxmoxPermissionError extends ProxmoxError {
  override name = "ProxmoxPermissionError";
}
