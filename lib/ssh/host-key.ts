import { createHash } from "node:crypto";

/**
 * OpenSSH-style fingerprint of a public host key blob (the SSH wire encoding), exactly what
 * `ssh-keygen -lf` prints: `SHA256:` + unpadded base64 of the SHA-256 digest.
 */
export function fingerprintSha256(publicKeyBlob: Buffer): string {
  const digest = createHash("sha256").update(publicKeyBlob).digest("base64");
  return `SHA256:${digest.replace(/=+$/, "")}`;
}

/**
 * Accepts a pin as stored or typed by an operator (with or without the `SHA256:` prefix, with
 * or without base64 padding, surrounding spaces) and returns the canonical form.
 */
export function normalizeFingerprint(fingerprint: string): string {
  const trimmed = fingerprint.trim();
  const body = trimmed.startsWith("SHA256:") ? trimmed.slice("SHA256:".length) : trimmed;
  return `SHA256:${body.replace(/=+$/, "")}`;
}

/**
 * The host offered a different host key than the one pinned at first contact. The connection
 * was refused before authentication: no password or key signature was sent.
 */
export class HostKeyMismatchError extends Error {
  override readonly name = "HostKeyMismatchError";
  readonly host: string;
  readonly port: number;
  readonly pinned: string;
  readonly offered: string;

  constructor(init: { host: string; port: number; pinned: string; offered: string }) {
    super(
      `SSH host key for ${init.host}:${init.port} changed: pinned ${init.pinned}, offered ${init.offered}. ` +
        "The console refused to connect. If the host was reinstalled, clear the pin on the host page; " +
        "otherwise treat this as a possible interception.",
    );
    this.host = init.host;
    this.port = init.port;
    this.pinned = init.pinned;
    this.offered = init.offered;
  }
}
