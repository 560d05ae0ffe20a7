import ssh2 from "ssh2";
import type { ParsedKey } from "ssh2";

import { fingerprintSha256 } from "@/lib/ssh/host-key";

// Default import: ssh2 is CommonJS; plain Node ESM cannot see `utils` as a named export.
const { utils } = ssh2;

export type ConsoleKeyPair = {
  /** OpenSSH private key (`-----BEGIN OPENSSH PRIVATE KEY-----`), what ssh2's client loads. */
  privateKey: string;
  /** `ssh-ed25519 AAAA… <comment>`: the authorized_keys line. */
  publicKey: string;
  /** `SHA256:…`, as `ssh-keygen -lf` prints it. */
  fingerprint: string;
};

/** The comment naming the console in authorized_keys: `clupilot-console@<key id prefix>`. */
export function consoleKeyComment(keyId: string): string {
  return `clupilot-console@${keyId.slice(0, 8)}`;
}

/**
 * A fresh Ed25519 pair in OpenSSH format. ssh2's generator now and then emits a private key it
 * cannot parse itself (seen about 1 in 300 in the lab), so every pair is parsed and
 * sign/verify-checked before it is used, and regenerated if bad: a console key that does not
 * load would lock the console out of every host it is installed on.
 */
export function generateConsoleKeyPair(comment: string): ConsoleKeyPair {
  for (let attempt = 0; attempt < 20; attempt += 1) {
    const pair = utils.generateKeyPairSync("ed25519", { comment });
    const privateKey = firstKey(utils.parseKey(pair.private));
    const publicKey = firstKey(utils.parseKey(pair.public));
    if (privateKey === null || publicKey === null) continue;
    if (!privateKey.getPublicSSH().equals(publicKey.getPublicSSH())) continue;
    const probe = Buffer.from("clupilot-console-key-check");
    if (publicKey.verify(probe, privateKey.sign(probe)) !== true) continue;
    return {
      privateKey: pair.private,
      publicKey: pair.public.trim(),
      fingerprint: fingerprintSha256(publicKey.getPublicSSH()),
    };
  }
  throw new Error("could not generate a usable Ed25519 key pair");
}

/** `SHA256:…` of an authorized_keys line (`type base64 [comment]`). */
export function publicKeyFingerprint(publicKeyLine: string): string {
  const key = firstKey(utils.parseKey(publicKeyLine.trim()));
  if (key === null) throw new Error("not an OpenSSH public key line");
  return fingerprintSha256(key.getPublicSSH());
}

function firstKey(parsed: ParsedKey | ParsedKey[] | Error): ParsedKey | null {
  if (parsed instanceof Error) return null;
  return (Array.isArray(parsed) ? parsed[0] : parsed) ?? null;
}
