import { eq, ne } from "drizzle-orm";

import type { Database } from "@/lib/db/client";
import { consoleKeyCredentials, consoleKeys, hosts } from "@/lib/db/schema";
import {
  connectSsh,
  HostKeyMismatchError,
  SshAuthError,
  type ExecResult,
  type SshSession,
} from "@/lib/ssh";

import { appendKeyCommand, hasKeyCommand, removeKeyCommand } from "../commands";
import { consoleKeyOfCredential } from "@/lib/host-access/host-credential";
import { consoleKeyPrivate } from "@/lib/host-access/console-key-store";

export type SwitchOutcome = {
  outcome: "switched" | "new_key_refused" | "unreachable";
  detail: string;
};

/** How the switch talks to the operator and runs commands; the pipeline logs each command. */
export type SwitchIo = {
  log(line: string): void;
  exec(session: SshSession, command: string): Promise<ExecResult>;
  /** Test hook: runs right after the new key was recorded for the host, before cleanup. */
  afterProven?(hostId: string): Promise<void>;
};

const READY_TIMEOUT_MS = 20_000;

/**
 * Moves one host to the new console key, in an order that never leaves it without a working
 * key, and that a crash at any point can resume:
 *
 * 1. log in with the key recorded for the host (the old one) — host key pin enforced;
 * 2. append the new public line to authorized_keys (idempotent);
 * 3. open a NEW connection with the new key (pin enforced again) and run a command: proven;
 * 4. record the new key for the host (committed at once: from now on it logs in with it);
 * 5. over the new connection, remove every older console key line (exact match), and check
 *    they are gone.
 *
 * A visit that dies between 4 and 5 resumes at 5 (the host is recorded on the new key). The
 * old key is never removed where the new one was not proven: a refused new key, or a host that
 * cannot be reached, keeps the old key and is reported.
 */
export async function switchHostToKey(
  db: Database,
  hostId: string,
  newKeyId: string,
  io: SwitchIo,
): Promise<SwitchOutcome> {
  const [host] = await db.select().from(hosts).where(eq(hosts.id, hostId));
  if (!host) return { outcome: "unreachable", detail: "The host was deleted; nothing to do." };
  if (host.retiredAt) {
    return { outcome: "unreachable", detail: "The host was retired meanwhile; not contacted." };
  }
  if (!host.hostKeySha256) {
    return {
      outcome: "unreachable",
      detail:
        "Not contacted: the console has never connected to this host, so there is no pinned host key to check it against. It keeps the old key; onboard it, then rotate again.",
    };
  }
  const target = {
    host: host.address,
    port: host.sshPort,
    username: host.sshUser,
    pinnedHostKey: host.hostKeySha256,
    readyTimeoutMs: READY_TIMEOUT_MS,
  };
  const [newKey] = await db.select().from(consoleKeys).where(eq(consoleKeys.id, newKeyId));
  if (!newKey) throw new Error(`console key ${newKeyId} does not exist`);
  const login = async (keyId: string) =>
    connectSsh({
      ...target,
      auth: { kind: "private_key", privateKey: await consoleKeyPrivate(db, keyId) },
    });

  let current = await consoleKeyOfCredential(db, host.credentialId);
  if (current === null) {
    return {
      outcome: "unreachable",
      detail: "No console key is recorded for this host; edit its credential. Not contacted.",
    };
  }

  let proven: SshSession | null = null;
  try {
    if (current !== newKeyId) {
      let old: SshSession | null = null;
      try {
        old = await login(current);
      } catch (error) {
        if (!(error instanceof SshAuthError)) {
          return { outcome: "unreachable", detail: `${untouched(error)} It keeps the old key.` };
        }
        // The recorded key is refused. If the host already trusts the new key (another host
        // entry for the same machine was just switched, or an operator installed it), a login
        // with it is the proof; otherwise the host is out of reach and left alone.
        proven = await login(newKeyId).catch(() => null);
        if (proven === null) {
          return { outcome: "unreachable", detail: `${untouched(error)} Nothing was changed.` };
        }
        io.log(`${host.name}: the recorded key is refused, but the new key already works`);
      }
      if (old !== null) {
        try {
          const appended = await io.exec(old, appendKeyCommand(newKey.publicKey));
          if (appended.code !== 0) {
            return {
              outcome: "unreachable",
              detail: `Could not add the new key to ~/.ssh/authorized_keys (exit ${String(appended.code)}: ${firstLine(appended.stderr)}). It keeps the old key; check the file's owner and permissions.`,
            };
          }
          try {
            proven = await login(newKeyId);
            const probe = await io.exec(proven, hasKeyCommand(newKey.publicKey));
            if (probe.code !== 0) throw new Error("the new key's line is not in authorized_keys");
          } catch (error) {
            proven?.close();
            proven = null;
            if (error instanceof SshAuthError) {
              return {
                outcome: "new_key_refused",
                detail:
                  "The host refused the new key although it was added to ~/.ssh/authorized_keys (check sshd's AuthorizedKeysFile, AllowUsers/Match rules, or a key policy). It keeps the old key, which the console keeps using for it.",
              };
            }
            return {
              outcome: "unreachable",
              detail: `The new key could not be proven: ${message(error)} It keeps the old key.`,
            };
          }
        } finally {
          old.close();
        }
      }
      // Proven: from this commit on the host logs in with the new key.
      await db
        .update(consoleKeyCredentials)
        .set({ consoleKeyId: newKeyId, assignedAt: new Date() })
        .where(eq(consoleKeyCredentials.credentialId, host.credentialId));
      current = newKeyId;
      io.log(`${host.name}: new key proven (${newKey.fingerprint}) and recorded`);
      await io.afterProven?.(host.id);
    }

    if (proven === null) {
      try {
        proven = await login(newKeyId);
      } catch (error) {
        return {
          outcome: "unreachable",
          detail: `The host is on the new key, but the old key could not be removed: ${message(error)} Rotate again once it is reachable.`,
        };
      }
    }
    const older = await db
      .select({ publicKey: consoleKeys.publicKey, fingerprint: consoleKeys.fingerprint })
      .from(consoleKeys)
      .where(ne(consoleKeys.id, newKeyId));
    const left: string[] = [];
    for (const key of older) {
      const removed = await io.exec(proven, removeKeyCommand(key.publicKey));
      const still = await io.exec(proven, hasKeyCommand(key.publicKey));
      if (removed.code !== 0 || still.code !== 1) left.push(key.fingerprint);
    }
    if (left.length > 0) {
      return {
        outcome: "unreachable",
        detail: `On the new key, but could not remove the old key line(s) ${left.join(", ")} from ~/.ssh/authorized_keys; remove them by hand or rotate again.`,
      };
    }
    return {
      outcome: "switched",
      detail: `New key ${newKey.fingerprint} proven; the old key was removed from ~/.ssh/authorized_keys.`,
    };
  } finally {
    proven?.close();
  }
}

function untouched(error: unknown): string {
  if (error instanceof HostKeyMismatchError) {
    return `Not touched: its SSH host key changed (pinned ${error.pinned}, offered ${error.offered}); if it was reinstalled, clear the pin on the host page.`;
  }
  if (error instanceof SshAuthError) {
    return "Not touched: it refused the console's current key (was it removed from authorized_keys?).";
  }
  return `Not touched: ${message(error)}`;
}

function message(error: unknown): string {
  return firstLine(error instanceof Error ? error.message : String(error));
}

function firstLine(text: string): string {
  return text.trim().split("\n")[0] ?? "";
}
