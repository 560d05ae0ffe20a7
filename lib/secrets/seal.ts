import crypto from "node:crypto";
import { loadSecretKey, type SecretKey } from "./key";

const VERSION = "v1";

/**
 * Seals a secret with AES-256-GCM. The envelope names the key it was sealed with, so a rotation
 * can tell old envelopes from new ones: `v1.<keyId>.<iv>.<tag>.<ciphertext>` (base64url parts).
 */
export function seal(plaintext: string, key: SecretKey = loadSecretKey()): string {
  const iv = crypto.randomBytes(12);
  const cipher = crypto.createCipheriv("aes-256-gcm", key.bytes, iv);
  const ciphertext = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
  const tag = cipher.getAuthTag();
  return [
    VERSION,
    key.id,
    iv.toString("base64url"),
    tag.toString("base64url"),
    ciphertext.toString("base64url"),
  ].join(".");
}

export function unseal(envelope: string, key: SecretKey = loadSecretKey()): string {
  const [version, keyId, iv, tag, ciphertext] = envelope.split(".");
  if (version !== VERSION || !keyId || !iv || !tag || ciphertext === undefined) {
    throw new Error("Stored secret is not a v1 envelope; the database may be damaged.");
  }
  if (keyId !== key.id) {
    throw new Error(
      `Stored secret was sealed with key ${keyId} but the console runs with key ${key.id}. ` +
        `Start the console with the key it was sealed with (CLUPILOT_SECRET_KEY or .data/secret.key).`,
    );
  }
  const decipher = crypto.createDecipheriv("aes-256-gcm", key.bytes, Buffer.from(iv, "base64url"));
  decipher.setAuthTag(Buffer.from(tag, "base64url"));
  return Buffer.concat([
    decipher.update(Buffer.from(ciphertext, "base64url")),
    decipher.final(),
  ]).toString("utf8");
}
