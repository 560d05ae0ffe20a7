import "server-only";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { dataDir } from "../config/paths";
import { syncFolder } from "../config/sync-folder";

const KEY_BYTES = 32;

export type SecretKey = { id: string; bytes: Buffer };

/**
 * The keys this process knows: `current` seals new secrets; every key in `byId` (current
 * included) opens envelopes sealed with it. Older keys stay here during and after a rotation
 * (lib/secrets/rotate.ts), so a secret is readable whichever step a rotation stopped at.
 */
export type Keyring = { current: SecretKey; byId: ReadonlyMap<string, SecretKey> };

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

export function generateSecretKey(): SecretKey {
  return parseSecretKey(crypto.randomBytes(KEY_BYTES).toString("hex"), "generated key");
}

export function secretKeyText(key: SecretKey): string {
  return key.bytes.toString("hex") + "\n";
}

export function secretKeyFile(): string {
  return path.join(dataDir(), "secret.key");
}

/** A rotation's new key, written before any secret is re-sealed with it. */
export function nextSecretKeyFile(): string {
  return `${secretKeyFile()}.next`;
}

/** Where a rotation keeps the key it replaced, until the user removes it. */
export function retiredSecretKeyFile(key: SecretKey, at: Date): string {
  return `${secretKeyFile()}.retired-${at.toISOString().slice(0, 10)}-${key.id}`;
}

/** `CLUPILOT_PREVIOUS_SECRET_KEYS`: older keys (comma- or space-separated) that only open. */
function previousKeysFromEnv(): SecretKey[] {
  return (process.env.CLUPILOT_PREVIOUS_SECRET_KEYS ?? "")
    .split(/[\s,]+/)
    .filter(Boolean)
    .map((text, index) => parseSecretKey(text, `CLUPILOT_PREVIOUS_SECRET_KEYS (key ${index + 1})`));
}

/** Every `secret.key.next` / `secret.key.retired-*` beside the key file. */
function extraKeyFiles(): string[] {
  const file = secretKeyFile();
  const dir = path.dirname(file);
  if (!fs.existsSync(dir)) return [];
  const base = path.basename(file);
  return fs
    .readdirSync(dir)
    .filter((name) => name === `${base}.next` || name.startsWith(`${base}.retired-`))
    .sort()
    .map((name) => path.join(dir, name));
}

function createKeyFileOnce(file: string): void {
  if (fs.existsSync(file)) return;
  fs.mkdirSync(path.dirname(file), { recursive: true });
  try {
    fs.writeFileSync(file, secretKeyText(generateSecretKey()), { mode: 0o600, flag: "wx" });
  } catch (error) {
    // Another process (web and worker start together) won the race: use its key.
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
}

function ring(current: SecretKey, others: SecretKey[]): Keyring {
  const byId = new Map<string, SecretKey>();
  for (const key of [current, ...others]) byId.set(key.id, key);
  return { current, byId };
}

/** What the key file looked like when it was read: a rotation replaces it by rename. */
function fileIdentity(file: string): string {
  const stat = fs.statSync(file);
  return `${stat.ino}:${stat.mtimeMs}:${stat.size}`;
}

let cached: { keyring: Keyring; identity: string | null } | undefined;

/**
 * Reads the keyring. With `CLUPILOT_SECRET_KEY` set, it is that key plus
 * `CLUPILOT_PREVIOUS_SECRET_KEYS`. Otherwise `.data/secret.key` (generated once, mode 0600,
 * never overwritten in place) plus the `.next` and `.retired-*` files a rotation leaves beside
 * it. Losing the key files makes stored credentials unreadable.
 */
function readKeyring(): { keyring: Keyring; identity: string | null } {
  const fromEnv = process.env.CLUPILOT_SECRET_KEY;
  if (fromEnv) {
    return {
      keyring: ring(parseSecretKey(fromEnv, "CLUPILOT_SECRET_KEY"), previousKeysFromEnv()),
      identity: null,
    };
  }
  const file = secretKeyFile();
  createKeyFileOnce(file);
  const current = parseSecretKey(fs.readFileSync(file, "utf8"), file);
  const others = extraKeyFiles().map((extra) =>
    parseSecretKey(fs.readFileSync(extra, "utf8"), extra),
  );
  return { keyring: ring(current, others), identity: fileIdentity(file) };
}

/**
 * The process's keyring, re-read when the key file was replaced since (a rotation ran while
 * this console was up): the next secret sealed uses the new key without a restart.
 */
export function loadKeyring(): Keyring {
  if (cached && cached.identity !== null) {
    const identity = currentIdentity();
    // A key file that vanished under a running console is not a reason to generate a new key
    // (that would seal new secrets with a key no backup has): keep using the one in memory.
    if (identity === null || identity === cached.identity) return cached.keyring;
  } else if (cached) {
    return cached.keyring;
  }
  cached = readKeyring();
  return cached.keyring;
}

function currentIdentity(): string | null {
  try {
    return fileIdentity(secretKeyFile());
  } catch {
    return null;
  }
}

/** Drops the cached keyring, e.g. when an envelope names a key this process has not seen yet. */
export function reloadKeyring(): Keyring {
  cached = undefined;
  return loadKeyring();
}

/** The key that seals new secrets. */
export function loadSecretKey(): SecretKey {
  return loadKeyring().current;
}

/** For tests that switch keys within one process. */
export function forgetSecretKey(): void {
  cached = undefined;
}

/**
 * Writes a key file atomically and durably (temp file, fsync, rename, fsync of the folder):
 * after a crash the file holds the whole old content or the whole new one, never a torn key.
 */
export function writeKeyFileAtomically(file: string, key: SecretKey): void {
  const temp = `${file}.tmp-${process.pid}`;
  const fd = fs.openSync(temp, "w", 0o600);
  try {
    fs.writeSync(fd, secretKeyText(key));
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(temp, file);
  syncFolder(path.dirname(file));
}
