import crypto from "node:crypto";

/**
 * A fresh random token: 256 bits, base64url. Session cookies, API tokens and the setup token all
 * start as one of these; the database only ever sees `sha256Hex` of it.
 */
export function randomToken(): string {
  return crypto.randomBytes(32).toString("base64url");
}

/**
 * SHA-256 as hex. Enough for tokens (256 random bits cannot be guessed, so a slow hash adds
 * nothing) and it lets a presented token be looked up by an index in one query.
 */
export function sha256Hex(value: string): string {
  return crypto.createHash("sha256").update(value, "utf8").digest("hex");
}
