import { hash, verify } from "@node-rs/argon2";

// @node-rs/argon2's defaults are Argon2id with m=19 MiB, t=2, p=1: OWASP's recommended minimum.
// The parameters are stored in the PHC string, so raising them later keeps old hashes working.

export function hashPassword(password: string): Promise<string> {
  return hash(password);
}

/** Whether `password` matches the stored hash; a malformed hash is a mismatch, not a crash. */
export async function verifyPassword(passwordHash: string, password: string): Promise<boolean> {
  try {
    return await verify(passwordHash, password);
  } catch {
    return false;
  }
}

let dummyHash: Promise<string> | undefined;

/**
 * Spends the same Argon2 work as a real check, for a name that does not exist: without it the
 * response time tells an attacker which user names are real.
 */
export async function verifyAgainstDummy(password: string): Promise<false> {
  dummyHash ??= hash("clupilot dummy password, never matches a real account");
  await verifyPassword(await dummyHash, password);
  return false;
}
