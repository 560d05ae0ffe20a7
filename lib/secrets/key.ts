import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { dataDir } from "../config/paths";

const KEY_BYTES = 32;

export type SecretKey = { id: string; bytes: Buffer };

function keyId(bytes: Buffer): string {
  return crypto.createHash("sha256").update(bytes).digest("hex").slice(0, 12);
}

export function parseSecretKey(text: string, origin: string): SecretKey {
  const trimmed = text.trim();
  const bytes = /^[0-9a-fA-F]{64}$/.test(trimmed)
    ? Buffer.from(trimmed, "hex")
    : Buffer.from(trimmed, "base64");
  if (bytes.length !== KEY_BYTES) {
    throw new Error(
      `${origin} must hold a 32-byte key as 64 hex characters or base64 (got ${bytes.length} bytes). ` +
        `Generate one with: openssl rand -hex 32`,
    );
  }
  return { id: keyId(bytes), bytes };
}

export function secretKeyFile(): string {
  return path.join(dataDir(), "secret.key");
}

let cached: SecretKey | undefined;

/**
 * The key that seals secrets at rest: `CLUPILOT_SECRET_KEY` when set, otherwise a key generated
 * once into `.data/secret.key` (mode 0600). Losing that file makes stored credentials unreadable,
 * so it is created exclusively and never overwritten.
 */
export function loadSecretKey(): SecretKey {
  if (cached) return cached;
  const fromEnv = process.env.CLUPILOT_SECRET_KEY;
  if (fromEnv) {
    cached = parseSecretKey(fromEnv, "CLUPILOT_SECRET_KEY");
    return cached;
  }
  const file = secretKeyFile();
  if (!fs.existsSync(file)) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    try {
      fs.writeFileSync(file, crypto.randomBytes(KEY_BYTES).toString("hex") + "\n", {
        mode: 0o600,
        flag: "wx",
      });
    } catch (error) {
      // Another process (web and worker start together) won the race: use its key.
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
  }
  cached = parseSecretKey(fs.readFileSync(file, "utf8"), file);
  return cached;
}

/** For tests that switch keys within one process. */
export function forgetSecretKey(): void {
  cached = undefined;
}
