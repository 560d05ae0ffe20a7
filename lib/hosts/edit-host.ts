import { eq } from "drizzle-orm";
import { z } from "zod";
import type { Database } from "@/lib/db/client";
import { credentials, events, hosts } from "@/lib/db/schema";
import { audited, type AuditActor } from "@/lib/audit/record-audit";
import { AppError } from "@/lib/errors";
import type { SshAuth } from "@/lib/ssh";
import { loadAuth } from "@/lib/steps/onboarding/services";
import { createHostCredential } from "@/lib/host-access/host-credential";
import {
  consoleKeyById,
  consoleKeyPrivate,
  ensureConsoleKey,
} from "@/lib/host-access/console-key-store";
import { hostNotFound, latestRun, lockHost, type HostRow } from "@/lib/host-access/host-guards";
import { seal } from "@/lib/secrets/seal";
import { ZCreateHostFields, ZSubscriptionKey } from "./schemas";
import { testConnection, type ConnectionTestResult, type CredentialField } from "./test-connection";
import {
  AUTH_METHODS,
  hostCredentialFields,
  refineHostCredential,
} from "@/lib/host-access/credential-schema";

/**
 * The edit form and `PATCH /api/hosts/:id`: where and how the console logs in. The name, API
 * port and pins are not edited here (the name is the host's identity in the fleet; the pins are
 * facts the console found, changed only by "Clear pin" and first contact).
 * `authMethod: "keep"` tests and keeps the stored credential.
 */
export const ZEditHost = z
  .object({
    address: ZCreateHostFields.shape.address,
    sshPort: ZCreateHostFields.shape.sshPort,
    sshUser: ZCreateHostFields.shape.sshUser,
    ...hostCredentialFields,
    authMethod: z.enum(["keep", ...AUTH_METHODS], {
      error:
        "Choose: keep the current credential, the console's key, a new password or a new private key.",
    }),
    // A new Proxmox VE subscription key replaces the stored one (ApplySubscription applies it
    // on the next Retry or onboarding); absent or blank keeps what is stored.
    subscriptionKey: ZSubscriptionKey,
  })
  .superRefine((value, ctx) => {
    const { authMethod } = value;
    if (authMethod !== "keep") refineHostCredential({ ...value, authMethod }, ctx);
  });
export type TEditHost = z.infer<typeof ZEditHost>;

export type EditHostResult = {
  hostId: string;
  /** What changed, in words (never a secret), as recorded in the host's events. */
  changes: string[];
  test: ConnectionTestResult;
  /** True when the host had no pin and the test's key was pinned now (first contact). */
  pinned: boolean;
};

/**
 * Tests the new settings over SSH against the host's pin and saves them only if the test passed.
 * A wrong password, a refused key, an unreachable address or a changed host key save nothing.
 * Refused while a run is running (the run would switch settings halfway) and for a retired host.
 */
export async function editHost(
  db: Database,
  input: { hostId: string; actor: string; edit: TEditHost },
): Promise<EditHostResult> {
  const { edit } = input;
  const host = await loadEditableHost(db, input.hostId);
  const test = await testSettings(db, host, edit);

  return db.transaction(async (tx) => {
    // Checked again under the row lock: a run or another edit may have started meanwhile.
    const locked = await lockHost(tx, host.id);
    await refuseIfBusy(tx, locked);
    if (locked.hostKeySha256 !== host.hostKeySha256) {
      throw new AppError(
        "conflict",
        `The host key pin of ${locked.name} changed while the connection was tested; nothing was saved. Test again.`,
      );
    }

    const changes: string[] = [];
    const set: Partial<HostRow> = {};
    if (edit.address !== locked.address) {
      set.address = edit.address;
      changes.push(`address ${locked.address} → ${edit.address}`);
    }
    if (edit.sshPort !== locked.sshPort) {
      set.sshPort = edit.sshPort;
      changes.push(`SSH port ${locked.sshPort} → ${edit.sshPort}`);
    }
    if (edit.sshUser !== locked.sshUser) {
      set.sshUser = edit.sshUser;
      changes.push(`SSH user ${locked.sshUser} → ${edit.sshUser}`);
    }
    let replacedCredential: string | null = null;
    const { authMethod } = edit;
    if (authMethod !== "keep") {
      set.credentialId = await createHostCredential(tx, { ...edit, authMethod });
      replacedCredential = locked.credentialId;
      changes.push(CREDENTIAL_CHANGE[authMethod]);
    }
    let replacedSubscriptionKey: string | null = null;
    if (edit.subscriptionKey) {
      const [sealed] = await tx
        .insert(credentials)
        .values({ kind: "subscription_key", sealed: seal(edit.subscriptionKey) })
        .returning({ id: credentials.id });
      set.subscriptionKeyCredentialId = sealed!.id;
      replacedSubscriptionKey = locked.subscriptionKeyCredentialId;
      changes.push(
        replacedSubscriptionKey ? "subscription key replaced" : "subscription key added",
      );
    }
    const pinned = locked.hostKeySha256 === null;
    if (pinned) {
      set.hostKeySha256 = test.hostKeySha256;
      set.hostKeyPinnedAt = new Date();
      changes.push(`host key ${test.hostKeySha256} pinned on first contact`);
    }
    if (changes.length > 0) {
      await tx
        .update(hosts)
        .set({ ...set, updatedAt: new Date() })
        .where(eq(hosts.id, locked.id));
    }
    // The old secret has no use left: keeping it would only keep a root credential around.
    if (replacedCredential)
      await tx.delete(credentials).where(eq(credentials.id, replacedCredential));
    if (replacedSubscriptionKey)
      await tx.delete(credentials).where(eq(credentials.id, replacedSubscriptionKey));
    await tx.insert(events).values({
      hostId: locked.id,
      kind: "host.edited",
      actor: input.actor,
      message:
        changes.length > 0
          ? `connection settings of ${locked.name} changed (tested first): ${changes.join("; ")}`
          : `connection settings of ${locked.name} tested and left as they were`,
    });
    return { hostId: locked.id, changes, test, pinned };
  });
}

/**
 * editHost under the audit log's `host.edit`. The entry names the settings and the kind of
 * credential, never the secret. Shared by the server action and `PATCH /api/hosts/:id`.
 */
export async function auditedHostEdit(
  db: Database,
  actor: AuditActor,
  input: { hostId: string; edit: TEditHost },
): Promise<EditHostResult> {
  const { hostId, edit } = input;
  return audited(
    db,
    {
      actor,
      action: "host.edit",
      target: `host:${hostId}`,
      detail: {
        address: edit.address,
        sshPort: edit.sshPort,
        sshUser: edit.sshUser,
        credential: edit.authMethod,
        ...(edit.subscriptionKey ? { subscriptionKey: "replaced" } : {}),
      },
    },
    () => editHost(db, { hostId, actor: actor.name, edit }),
  );
}

/**
 * "Test connection" without saving: the stored host with the form's settings, against its pin.
 * With no pin yet the offered key is only reported; it is pinned when the settings are saved (or
 * by the next run), so a test of a mistyped address never pins a stranger's key.
 */
export async function testHostConnection(
  db: Database,
  input: { hostId: string; edit: TEditHost },
): Promise<ConnectionTestResult> {
  const [host] = await db.select().from(hosts).where(eq(hosts.id, input.hostId));
  if (!host) throw hostNotFound(input.hostId);
  // A retired host is never connected to again (its secrets are gone); a run may be running.
  if (host.retiredAt) await refuseIfBusy(db, host);
  const { edit } = input;
  return testSettings(db, host, edit);
}

/** The form's settings tried against the stored host: its credential if kept, its pin. */
async function testSettings(
  db: Database,
  host: HostRow,
  edit: TEditHost,
): Promise<ConnectionTestResult> {
  return testConnection(
    {
      address: edit.address,
      sshPort: edit.sshPort,
      sshUser: edit.sshUser,
      auth: await authFor(db, host, edit),
      pinnedHostKey: host.hostKeySha256,
    },
    credentialFieldOf(edit),
  );
}

async function loadEditableHost(db: Database, hostId: string): Promise<HostRow> {
  const [host] = await db.select().from(hosts).where(eq(hosts.id, hostId));
  if (!host) throw hostNotFound(hostId);
  await refuseIfBusy(db, host);
  return host;
}

/** Settings change between runs only; a retired host is history. */
export async function refuseIfBusy(db: Pick<Database, "select">, host: HostRow): Promise<void> {
  if (host.retiredAt) {
    throw new AppError(
      "conflict",
      `${host.name} is retired; its settings are kept as they were when it was decommissioned.`,
    );
  }
  const latest = await latestRun(db, host.id);
  if (latest?.status === "running") {
    throw new AppError(
      "conflict",
      `${host.name} has a run in progress (at ${latest.currentStep}); nothing was saved. Wait for it to end, or abort it, then edit the host.`,
    );
  }
}

const CREDENTIAL_CHANGE = {
  password: "new SSH password",
  private_key: "new SSH private key",
  console_key: "now logs in with the console's key",
} as const;

async function authFor(db: Database, host: HostRow, edit: TEditHost): Promise<SshAuth> {
  switch (edit.authMethod) {
    case "keep":
      return loadAuth(db, host.credentialId);
    case "console_key": {
      // The key the operator installed (its id came with the form); saving checks it is still
      // the active one (createHostCredential), so a host never moves to a key being replaced.
      const key = edit.consoleKeyId
        ? await consoleKeyById(db, edit.consoleKeyId)
        : await ensureConsoleKey(db);
      if (!key) {
        throw new AppError("invalid_input", "That console key does not exist.", {
          authMethod: ["Reload the page and install the console key it shows."],
        });
      }
      return { kind: "private_key", privateKey: await consoleKeyPrivate(db, key.id) };
    }
    case "password":
      return { kind: "password", password: edit.password ?? "" };
    case "private_key":
      return {
        kind: "private_key",
        privateKey: `${edit.privateKey?.trim() ?? ""}\n`,
        ...(edit.passphrase ? { passphrase: edit.passphrase } : {}),
      };
  }
}

function credentialFieldOf(edit: TEditHost): CredentialField {
  if (edit.authMethod === "password") return "password";
  if (edit.authMethod === "private_key") return "privateKey";
  if (edit.authMethod === "console_key") return "consoleKey";
  return "storedCredential";
}
