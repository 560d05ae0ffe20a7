import { createHash } from "node:crypto";
import { and, eq, isNull } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { credentials, events, hosts } from "@/lib/db/schema";
import { loadCredentialAuth } from "@/lib/host-access/host-credential";
import {
  connectSsh,
  type ExecOptions,
  type ExecResult,
  type SshAuth,
  type SshSession,
} from "@/lib/ssh";
import { StringDecoder } from "node:string_decoder";
import { LineSplitter } from "@/lib/logs/line-splitter";
import { commandHeader, commandResult, formatDuration } from "@/lib/logs/text";
import type { RunLogSink, RunRef, TickScope, Waiter, WorkerResources } from "@/lib/pipeline/step";
import type { ProxmoxClient } from "@/lib/proxmox/client";
import { proxmoxClientForHost } from "@/lib/host-access/proxmox-client";
import {
  requiredTemplateVmids,
  type RequiredTemplates,
} from "@/lib/catalog/required-template-vmids";
import { seal, unseal } from "@/lib/secrets/seal";
import { asRoot } from "../remote-job/remote-host";
import type { OnboardingConfig } from "./config";
import { runWatch, type WatchShows } from "../remote-job/watch-waiter";

export type HostRecord = typeof hosts.$inferSelect;

/** What a host step may use during one tick. */
export type HostServices = {
  host(): Promise<HostRecord>;
  /**
   * The tick's SSH connection, opened on first use (or the one the worker keeps for this run,
   * host and login: lib/ssh/pool.ts); pins the host key on first contact. Its commands carry the tick's
   * signal unless given their own (both then count).
   */
  ssh(): Promise<SshSession>;
  /**
   * Closes the tick's connection and opens a new one (same pinned key; a kept one is retired):
   * commands go over it from then on. Proves the host still takes connections after a change
   * that could cut it off.
   */
  reconnect(readyTimeoutMs?: number): Promise<SshSession>;
  /**
   * Runs a command as root (through `sudo -n` for a non-root user) and logs it: a header with
   * step, time and command, the output as it arrives, then exit code and duration. Bound to the
   * tick's signal (the visit's, or a clean-up's own) unless `options.signal` is given too.
   */
  exec(command: string, options?: ExecOptions): Promise<ExecResult>;
  /**
   * A waiter for `pollUntil` that runs `command` as root on the host over the kept connection
   * and ends when it exits: a watch loop (remote-watch.ts) that exits printing `changed` on a
   * change, `unchanged` when its time is up, and shows what it reports meanwhile as `shows`
   * says (the phase line, the followed file's lines: watch-waiter.ts). Not logged.
   */
  watchCommand(what: string, command: string, timeoutSeconds: number, shows?: WatchShows): Waiter;
  /**
   * A waiter whose watching is the step's own: `until` connects (the kept connection while it
   * lives, else a new one with the pinned key) as often as it needs and resolves true on a
   * change, false when it stopped watching without one.
   */
  waiter(what: string, until: (connect: Connect, signal: AbortSignal) => Promise<boolean>): Waiter;
  /** The host's Proxmox API through its pinned certificate and the console's token. */
  proxmox(): Promise<ProxmoxClient>;
  /** The template VMIDs the catalog requires (lib/catalog: the one place that decides). */
  requiredTemplates(): Promise<RequiredTemplates>;
  /** Records facts a step established about the host (node name, API pin, capacity, …). */
  updateHost(facts: HostFacts): Promise<void>;
  /** Stores the console's API token for this host; the secret is sealed like every secret. */
  storeApiToken(tokenId: string, secret: string): Promise<void>;
  /**
   * The host's Proxmox VE subscription key, unsealed, or null when it has none. Masked in the
   * run log from here on (a `pvesh get` of the subscription prints it back).
   */
  subscriptionKey(): Promise<string | null>;
  config: OnboardingConfig;
  /** The tick's database (catalog reads, log tailing, abort checks). */
  db: Database;
};

/** A connection to the host for a waiter; the caller closes it (hands a kept one back). */
export type Connect = (readyTimeoutMs?: number) => Promise<SshSession>;

export type HostFacts = Partial<
  Pick<
    HostRecord,
    | "nodeName"
    | "apiCertSha256"
    | "capacityCores"
    | "capacityMemoryMib"
    | "capacityImageStorageGib"
    | "capacityRegisteredAt"
    | "templateCheckFailure"
    | "templateCheckedAt"
    | "clusterName"
  >
>;

export function createHostServices(
  db: Database,
  run: TickScope,
  config: OnboardingConfig,
  resources: WorkerResources = {},
): { services: HostServices; dispose(): Promise<void> } {
  const pool = resources.sshConnections;
  let hostPromise: Promise<HostRecord> | undefined;
  let sessionPromise: Promise<SshSession> | undefined;

  const host = () => {
    hostPromise ??= loadHost(db, run.hostId);
    return hostPromise;
  };

  /** The login the host record names, unsealed, and its secret masked in the log. */
  const login = async () => {
    const record = await host();
    const auth = await loadAuth(db, record.credentialId);
    run.maskSecret(auth.kind === "password" ? auth.password : (auth.passphrase ?? ""));
    return { record, auth };
  };

  const open = async (record: HostRecord, auth: SshAuth, readyTimeoutMs?: number) => {
    const session = await connectSsh({
      host: record.address,
      port: record.sshPort,
      username: record.sshUser,
      auth,
      pinnedHostKey: record.hostKeySha256,
      ...(readyTimeoutMs === undefined ? {} : { readyTimeoutMs }),
    });
    if (!record.hostKeySha256) await pinHostKey(db, record, session.hostKeySha256, run);
    return session;
  };

  /**
   * The connection this run keeps to the host, or a new one; first contact is never kept. Kept
   * per run: a run proves its own login, so what changed on the host between two runs (a new
   * host key, sshd refusing new connections) shows in the next run's first visit.
   */
  const scope = (record: HostRecord) => `${record.id}/${run.runId}`;
  const connect = async (readyTimeoutMs?: number) => {
    const { record, auth } = await login();
    if (!pool || !record.hostKeySha256) return open(record, auth, readyTimeoutMs);
    return pool.lease({ scope: scope(record), identity: loginIdentity(record, auth) }, () =>
      open(record, auth, readyTimeoutMs),
    );
  };

  const tickSignal = (own: AbortSignal | undefined) =>
    own === undefined || own === run.signal ? run.signal : AbortSignal.any([own, run.signal]);

  /** The tick's commands stop with the tick's signal (the visit's, then a clean-up's own). */
  const bound = (session: SshSession): SshSession => ({
    get hostKeySha256() {
      return session.hostKeySha256;
    },
    get alive() {
      return session.alive;
    },
    exec: (command, options) =>
      session.exec(command, { ...options, signal: tickSignal(options?.signal) }),
    upload: (remotePath, bytes, options) => session.upload(remotePath, bytes, options),
    close: () => session.close(),
  });

  const ssh = () => {
    sessionPromise ??= connect().then(bound);
    // A failed connect must not be cached for the rest of the tick.
    sessionPromise.catch(() => (sessionPromise = undefined));
    return sessionPromise;
  };

  const reconnect = async (readyTimeoutMs?: number) => {
    const previous = sessionPromise;
    sessionPromise = undefined;
    (await previous?.catch(() => undefined))?.close();
    // A fresh connection is the proof asked for: the kept one must not answer for it.
    pool?.retire(scope(await host()));
    sessionPromise = connect(readyTimeoutMs).then(bound);
    sessionPromise.catch(() => (sessionPromise = undefined));
    return sessionPromise;
  };

  const exec = async (command: string, options?: ExecOptions) => {
    const record = await host();
    const session = await ssh();
    const wrapped = asRoot(record.sshUser, command);
    const started = Date.now();
    run.log(commandHeader(run.step, command, new Date(started)), "command");
    const streams = { stdout: new OutputLines(), stderr: new OutputLines() };
    const logLines = (lines: string[]) => {
      for (const line of lines) run.log(line, "output");
    };
    try {
      const result = await session.exec(wrapped, {
        ...options,
        onOutput: (stream, chunk) => {
          options?.onOutput?.(stream, chunk);
          logLines(streams[stream].push(chunk));
        },
      });
      logLines(streams.stdout.end());
      logLines(streams.stderr.end());
      run.log(commandResult(result.code, result.signal, result.durationMs), "result");
      return result;
    } catch (error) {
      logLines(streams.stdout.end());
      logLines(streams.stderr.end());
      const message = error instanceof Error ? error.message.split("\n")[0] : String(error);
      run.log(`◀ failed after ${formatDuration(Date.now() - started)}: ${message}`, "result");
      throw error;
    }
  };

  const waiter = (
    what: string,
    until: (connect: Connect, signal: AbortSignal) => Promise<boolean>,
  ): Waiter => ({ what, wait: (signal) => until(connect, signal) });

  const watchCommand = (
    what: string,
    command: string,
    timeoutSeconds: number,
    shows: WatchShows = {},
  ): Waiter => ({
    what,
    async wait(signal, progress) {
      const record = await host();
      const session = await connect();
      try {
        const result = await runWatch(session, asRoot(record.sshUser, command), {
          signal,
          timeoutMs: timeoutSeconds * 1000,
          progress,
          shows,
        });
        if (result.code !== null && result.code !== 0)
          throw new Error(
            `watching ${what} failed (exit ${result.code}): ${result.stderr.trim() || "no error output"}`,
          );
        return result.changed;
      } finally {
        session.close();
      }
    },
  });

  const proxmox = async () =>
    proxmoxClientForHost(db, await host(), { onSecret: (secret) => run.maskSecret(secret) });

  const requiredTemplates = () => requiredTemplateVmids(db);

  const updateHost = async (facts: HostFacts) => {
    const record = await host();
    await db
      .update(hosts)
      .set({ ...facts, updatedAt: new Date() })
      .where(eq(hosts.id, record.id));
    Object.assign(record, facts);
  };

  const storeApiToken = async (tokenId: string, secret: string) => {
    const record = await host();
    run.maskSecret(secret);
    await db.transaction(async (tx) => {
      const [credential] = await tx
        .insert(credentials)
        .values({ kind: "api_token", sealed: seal(secret) })
        .returning({ id: credentials.id });
      await tx
        .update(hosts)
        .set({ apiTokenId: tokenId, apiTokenCredentialId: credential!.id, updatedAt: new Date() })
        .where(eq(hosts.id, record.id));
      record.apiTokenId = tokenId;
      record.apiTokenCredentialId = credential!.id;
    });
  };

  const subscriptionKey = async () => {
    const record = await host();
    if (!record.subscriptionKeyCredentialId) return null;
    const [row] = await db
      .select({ sealed: credentials.sealed })
      .from(credentials)
      .where(eq(credentials.id, record.subscriptionKeyCredentialId));
    if (!row) throw new Error("the host's subscription key credential is missing");
    const key = unseal(row.sealed);
    run.maskSecret(key);
    return key;
  };

  return {
    services: {
      host,
      ssh,
      reconnect,
      exec,
      watchCommand,
      waiter,
      proxmox,
      requiredTemplates,
      db,
      updateHost,
      storeApiToken,
      subscriptionKey,
      config,
    },
    async dispose() {
      const session = await sessionPromise?.catch(() => undefined);
      session?.close();
    },
  };
}

/**
 * Everything a kept connection was opened with that must still hold to reuse it: where, who,
 * the pinned host key and the credential itself (a digest; the secret never leaves here).
 */
function loginIdentity(record: HostRecord, auth: SshAuth): string {
  return createHash("sha256")
    .update(
      JSON.stringify([record.address, record.sshPort, record.sshUser, record.hostKeySha256, auth]),
    )
    .digest("hex");
}

/** One output stream of a command, decoded (UTF-8 split across chunks) and cut into lines. */
class OutputLines {
  private readonly decoder = new StringDecoder("utf8");
  private readonly splitter = new LineSplitter();

  push(chunk: Buffer): string[] {
    const lines = this.splitter.push(this.decoder.write(chunk));
    const overlong = this.splitter.takeOverlong();
    return overlong === null ? lines : [...lines, overlong];
  }

  end(): string[] {
    return [...this.splitter.push(this.decoder.end()), ...this.splitter.end()];
  }
}

async function loadHost(db: Database, hostId: string | null): Promise<HostRecord> {
  if (!hostId) throw new Error("this run belongs to no host");
  const [record] = await db.select().from(hosts).where(eq(hosts.id, hostId));
  if (!record) throw new Error(`host ${hostId} no longer exists`);
  return record;
}

/**
 * The SSH login of a stored credential, unsealed (edit-host tests it with "keep current").
 * A host on the console's key gets the key proven for it (lib/console-key).
 */
export async function loadAuth(db: Database, credentialId: string): Promise<SshAuth> {
  return loadCredentialAuth(db, credentialId);
}

/**
 * First contact: remember the key the host presented. Compare-and-set, so two ticks racing on
 * first contact cannot overwrite each other's pin.
 */
async function pinHostKey(
  db: Database,
  record: HostRecord,
  fingerprint: string,
  run: RunRef & RunLogSink,
): Promise<void> {
  const pinned = await db
    .update(hosts)
    .set({ hostKeySha256: fingerprint, hostKeyPinnedAt: new Date(), updatedAt: new Date() })
    .where(and(eq(hosts.id, record.id), isNull(hosts.hostKeySha256)))
    .returning({ id: hosts.id });
  if (pinned.length === 0) {
    throw new Error(
      "the host key was pinned by another connection meanwhile; retrying against that pin",
    );
  }
  record.hostKeySha256 = fingerprint;
  run.log(`pinned SSH host key ${fingerprint} on first contact`);
  await db.insert(events).values({
    hostId: record.id,
    runId: run.runId,
    kind: "host.key_pinned",
    actor: "engine",
    message: `SSH host key ${fingerprint} pinned on first contact`,
  });
}
