import "server-only";
import { eq } from "drizzle-orm";

import { AppError } from "@/lib/errors";
import type { Database } from "@/lib/db/client";
import { consoleKeyCredentials, credentials } from "@/lib/db/schema";
import type { THostCredentialInput } from "@/lib/host-access/credential-schema";
import { seal, unseal } from "@/lib/secrets/seal";
import type { SshAuth } from "@/lib/ssh";

import { consoleKeyById, consoleKeyPrivate, ensureConsoleKey } from "./console-key-store";

type Executor = Pick<Database, "select" | "insert">;

/**
 * Stores a host's login as a credential row and returns its id. Password and pasted key are
 * sealed; "the console's key" stores no secret of its own, only which console key the host
 * was given (the one whose install command the operator saw, which must still be the active
 * one: a host must never start on a key a rotation is replacing).
 */
export async function createHostCredential(
  tx: Executor,
  input: THostCredentialInput,
): Promise<string> {
  if (input.authMethod === "console_key") {
    const active = await ensureConsoleKey(tx);
    const shown = input.consoleKeyId ? await consoleKeyById(tx, input.consoleKeyId) : active;
    if (!shown || shown.id !== active.id) {
      throw new AppError(
        "conflict",
        "The console's key was replaced while you filled in the form.",
        {
          authMethod: [
            "Reload the page, install the key now shown on the host, then add the host again.",
          ],
        },
      );
    }
    const [credential] = await tx
      .insert(credentials)
      .values({ kind: "console_key", sealed: seal("{}") })
      .returning({ id: credentials.id });
    if (!credential) throw new Error("inserting the credential returned no row");
    await tx
      .insert(consoleKeyCredentials)
      .values({ credentialId: credential.id, consoleKeyId: active.id });
    return credential.id;
  }
  const secret =
    input.authMethod === "password"
      ? JSON.stringify({ password: input.password })
      : JSON.stringify({
          privateKey: input.privateKey?.trim() + "\n",
          passphrase: input.passphrase || undefined,
        });
  const [credential] = await tx
    .insert(credentials)
    .values({ kind: input.authMethod, sealed: seal(secret) })
    .returning({ id: credentials.id });
  if (!credential) throw new Error("inserting the credential returned no row");
  return credential.id;
}

/**
 * The SSH login a stored credential stands for, unsealed. A `console_key` credential resolves
 * to the console key proven for that host (during a rotation the old one until the new one has
 * worked there), never to "whatever key is active".
 */
export async function loadCredentialAuth(db: Executor, credentialId: string): Promise<SshAuth> {
  const [credential] = await db.select().from(credentials).where(eq(credentials.id, credentialId));
  if (!credential)
    throw new Error("the host's credential is missing; edit the host and enter it again");
  if (credential.kind === "console_key") {
    const keyId = await consoleKeyOfCredential(db, credentialId);
    if (!keyId) {
      throw new Error(
        "the host is set to use the console's key, but no key is recorded for it; edit the host and choose its credential again",
      );
    }
    return { kind: "private_key", privateKey: await consoleKeyPrivate(db, keyId) };
  }
  const secret = JSON.parse(unseal(credential.sealed)) as {
    password?: string;
    privateKey?: string;
    passphrase?: string;
  };
  if (credential.kind === "password") return { kind: "password", password: secret.password ?? "" };
  return {
    kind: "private_key",
    privateKey: secret.privateKey ?? "",
    passphrase: secret.passphrase,
  };
}

/** The console key a `console_key` credential logs in with, or null. */
export async function consoleKeyOfCredential(
  db: Executor,
  credentialId: string,
): Promise<string | null> {
  const [row] = await db
    .select({ keyId: consoleKeyCredentials.consoleKeyId })
    .from(consoleKeyCredentials)
    .where(eq(consoleKeyCredentials.credentialId, credentialId));
  return row?.keyId ?? null;
}
