import "server-only";
import crypto from "node:crypto";
import { loadKeyring, loadSecretKey, reloadKeyring, type Keyring, type SecretKey } from "./key";

const VERSION = "v1";

export type Envelope = { keyId: string; iv: string; tag: string; ciphertext: string };

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

export function parseEnvelope(envelope: string): Envelope {
  const [version, keyId, iv, tag, ciphertext, extra] = envelope.split(".");
  if (version !== VERSION || !keyId || !iv || !tag || ciphertext === undefined || extra) {
    throw new Error("Stored secret is not a v1 envelope; the database may be damaged.");
  }
  return { keyId, iv, tag, ciphertext };
}

/** The id of the key an envelope was sealed with. */
export function envelopeKeyId(envelope: string): string {
  return parseEnvelope(envelope).keyId;
}

/**
 * Opens an envelope with the given key, or with the key it names from the keyring (by default
 * the process's own). An envelope naming a key this process has not loaded makes it re-read its
 * key files once: a rotation may have re-sealed it while the console was running.
 */
export function unseal(envelope: string, keys: SecretKey | Keyring = loadKeyring()): string {
  const { keyId, iv, tag, ciphertext } = parseEnvelope(envelope);
  const key = "bytes" in keys ? keys : keyFromRing(keys, keyId);
  if (keyId !== key.id) {
    throw new Error(
      `Stored secret was sealed with key ${keyId} but the console runs with key ${key.id}. ` +
        `Start the console with the key it was sealed with (CLUPILOT_SECRET_KEY or .data/secret.key); ` +
        `after a rotation, keep the old key in CLUPILOT_PREVIOUS_SECRET_KEYS or its .data/secret.key.retired-* file.`,
    );
  }
  const decipher = crypto.createDecipheriv("aes-256-gcm", key.bytes, Buffer.from(iv, "base64url"));
  decipher.setAuthTag(Buffer.from(tag, "base64url"));
  return Buffer.concat([
    decipher.update(Buffer.from(ciphertext, "base64url")),
    decipher.final(),
  ]).toString("utf8");
}

function keyFromRing(keyring: Keyring, keyId: string): SecretKey {
  const found = keyring.byId.get(keyId);
  if (found) return found;
  // Only the process's own keyring can be re-read; a keyring passed in is taken as given.
  if (keyring !== loadKeyring()) return keyring.current;
  return reloadKeyring().byId.get(keyId) ?? keyring.current;
}
