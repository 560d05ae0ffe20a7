import { and, eq, isNull } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { credentials, events, hosts } from "@/lib/db/schema";
import { loadCredentialAuth } from "@/lib/host-access/host-credential";
import {
  connectSsh,
  sh,
  type ExecOptions,
  type ExecResult,
  type SshAuth,
  type SshSession,
} from "@/lib/ssh";
import { StringDecoder } from "node:string_decoder";
import { LineSplitter } from "@/lib/logs/line-splitter";
import { commandHeader, commandResult, formatDuration } from "@/lib/logs/text";
import type { RunLogSink, RunRef } from "@/lib/pipeline/step";
import type { ProxmoxClient } from "@/lib/proxmox/client";
import { proxmoxClientForHost } from "@/lib/host-access/proxmox-client";
import {
  requiredTemplateVmids,
  type RequiredTemplates,
} from "@/lib/catalog/required-template-vmids";
import { seal } from "@/lib/secrets/seal";
import type { OnboardingConfig } from "./config";

export type HostRecord = typeof hosts.$inferSelect;

/** What a host step may use during one tick. */
export type HostServices = {
  host(): Promise<HostRecord>;
  /** The tick's SSH connection, opened on first use; pins the host key on first contact. */
  ssh(): Promise<SshSession>;
  /**
   * Closes the tick's connection and opens a new one (same pinned key): commands go over it
   * from then on. Proves the host still takes connections after a change that could cut it off.
   */
  reconnect(readyTimeoutMs?: number): Promise<SshSession>;
  /**
   * Runs a command as root (through `sudo -n` for a non-root user) and logs it: a header with
   * step, time and command, the output as it arrives, then exit code and duration.
   */
  exec(command: string, options?: ExecOptions): Promise<ExecResult>;
  /** The host's Proxmox API through its pinned certificate and the console's token. */
  proxmox(): Promise<ProxmoxClient>;
  /** The template VMIDs the catalog requires (lib/catalog: the one place that decides). */
  requiredTemplates(): Promise<RequiredTemplates>;
  /** Records facts a step established about the host (node name, API pin, capacity, …). */
  updateHost(facts: HostFacts): Promise<void>;
  /** Stores the console's API token for this host; the secret is sealed like every secret. */
  storeApiToken(tokenId: string, secret: string): Promise<void>;
  config: OnboardingConfig;
  /** The tick's database (catalog reads, log tailing, abort checks). */
  db: Database;
};

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
  >
>;

/** A command as root: as is for root, through `sudo -n` (never prompting) for anyone else. */
export function asRoot(sshUser: string, command: string): string {
  return sshUser === "root" ? command : sh`sudo -n sh -c ${command}`;
}

export function createHostServices(
  db: Database,
  run: RunRef & RunLogSink,
  config: OnboardingConfig,
): { services: HostServices; dispose(): Promise<void> } {
  let hostPromise: Promise<HostRecord> | undefined;
  let sessionPromise: Promise<SshSession> | undefined;

  const host = () => {
    hostPromise ??= loadHost(db, run.hostId);
    return hostPromise;
  };

  const connect = async (readyTimeoutMs?: number) => {
    const record = await host();
    const auth = await loadAuth(db, record.credentialId);
    run.maskSecret(auth.kind === "password" ? auth.password : (auth.passphrase ?? ""));
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

  const ssh = () => {
    sessionPromise ??= connect();
    // A failed connect must not be cached for the rest of the tick.
    sessionPromise.catch(() => (sessionPromise = undefined));
    return sessionPromise;
  };

  const reconnect = async (readyTimeoutMs?: number) => {
    const previous = sessionPromise;
    sessionPromise = undefined;
    (await previous?.catch(() => undefined))?.close();
    sessionPromise = connect(readyTimeoutMs);
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

  return {
    services: {
      host,
      ssh,
      reconnect,
      exec,
      proxmox,
      requiredTemplates,
      db,
      updateHost,
      storeApiToken,
      config,
    },
    async dispose() {
      const session = await sessionPromise?.catch(() => undefined);
      session?.close();
    },
  };
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
