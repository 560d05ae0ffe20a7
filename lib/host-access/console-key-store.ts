import "server-only";
import { randomUUID } from "node:crypto";
import { eq } from "drizzle-orm";

import type { Database } from "@/lib/db/client";
import { consoleKeys } from "@/lib/db/schema";
import { seal, unseal } from "@/lib/secrets/seal";

import { consoleKeyComment, generateConsoleKeyPair } from "./console-key-pair";

type Executor = Pick<Database, "select" | "insert">;

/** What the browser and the API may see of a console key: never the private half. */
export type ConsoleKeyInfo = {
  id: string;
  publicKey: string;
  fingerprint: string;
  state: (typeof consoleKeys.$inferSelect)["state"];
  createdAt: Date;
  activatedAt: Date;
  retiredAt: Date | null;
};

/** The columns of a console key that may leave the console (never the sealed private key). */
export const publicColumns = {
  id: consoleKeys.id,
  publicKey: consoleKeys.publicKey,
  fingerprint: consoleKeys.fingerprint,
  state: consoleKeys.state,
  createdAt: consoleKeys.createdAt,
  activatedAt: consoleKeys.activatedAt,
  retiredAt: consoleKeys.retiredAt,
};

export async function activeConsoleKey(db: Executor): Promise<ConsoleKeyInfo | null> {
  const [key] = await db
    .select(publicColumns)
    .from(consoleKeys)
    .where(eq(consoleKeys.state, "active"));
  return key ?? null;
}

export async function consoleKeyById(db: Executor, id: string): Promise<ConsoleKeyInfo | null> {
  const [key] = await db.select(publicColumns).from(consoleKeys).where(eq(consoleKeys.id, id));
  return key ?? null;
}

/**
 * The console's active key, generated on first use. Safe when several processes (web, worker,
 * a second console on the same database) start at once: the partial unique index lets one
 * insert win, the others insert nothing and read the winner's key.
 */
export async function ensureConsoleKey(db: Executor): Promise<ConsoleKeyInfo> {
  const existing = await activeConsoleKey(db);
  if (existing) return existing;
  await insertConsoleKey(db, "active");
  const key = await activeConsoleKey(db);
  if (!key) throw new Error("no active console key after creating one");
  return key;
}

/**
 * A new pair, private half sealed. `active` inserts nothing when another active key exists
 * (returns null); a rotation first demotes the current one in the same transaction.
 */
export async function insertConsoleKey(
  db: Executor,
  state: "active",
): Promise<ConsoleKeyInfo | null> {
  const id = randomUUID();
  const pair = generateConsoleKeyPair(consoleKeyComment(id));
  const [row] = await db
    .insert(consoleKeys)
    .values({
      id,
      publicKey: pair.publicKey,
      fingerprint: pair.fingerprint,
      sealedPrivateKey: seal(pair.privateKey),
      state,
    })
    .onConflictDoNothing()
    .returning(publicColumns);
  return row ?? null;
}

/** The unsealed OpenSSH private key, for an SSH login. Never log or return it. */
export async function consoleKeyPrivate(db: Executor, id: string): Promise<string> {
  const [row] = await db
    .select({ sealed: consoleKeys.sealedPrivateKey })
    .from(consoleKeys)
    .where(eq(consoleKeys.id, id));
  if (!row) throw new Error(`console key ${id} does not exist`);
  return unseal(row.sealed);
}
