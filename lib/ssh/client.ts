import "server-only";
import { createHash, randomBytes } from "node:crypto";

// Default import: under plain Node ESM (tsx, the worker) ssh2 is CommonJS and its named
// exports are not all detectable; vitest would hide that.
import ssh2 from "ssh2";
import type { ClientChannel, Client as SshClient, ConnectConfig } from "ssh2";

import {
  GROUP_MARKER,
  killGroupCommand,
  UPLOAD_CHECKSUM_MISMATCH_EXIT,
  uploadCommand,
  withGroupMarker,
} from "./commands";
import {
  SshAuthError,
  SshChannelError,
  SshCommandTimeoutError,
  SshConnectError,
  SshUploadError,
  type SshConnectFailure,
} from "./errors";
import { HostKeyMismatchError, fingerprintSha256, normalizeFingerprint } from "./host-key";

export type SshAuth =
  | { kind: "password"; password: string }
  | { kind: "private_key"; privateKey: string; passphrase?: string };

export type SshTarget = {
  host: string;
  port: number;
  username: string;
  auth: SshAuth;
  /** `SHA256:…` pinned at first contact; `null` = first contact, accept and report the key. */
  pinnedHostKey: string | null;
  /** TCP connect + SSH handshake + authentication. Default 20 s. */
  readyTimeoutMs?: number;
};

export type ExecResult = {
  /** Exit status, or `null` when the command was killed by a signal. */
  code: number | null;
  /** Signal name such as `SIGKILL` when the command was killed by one. */
  signal: string | null;
  stdout: string;
  stderr: string;
  /** True when stdout or stderr exceeded `maxOutputBytes` and was cut. */
  truncated: boolean;
  durationMs: number;
};

export type ExecOptions = {
  /** Default 60 s. On expiry the command is signalled, its channel closed, and the call rejects. */
  timeoutMs?: number;
  /** Per stream; the first bytes are kept, the rest is drained and dropped. Default 1 MiB. */
  maxOutputBytes?: number;
  /** Sent to the command's stdin, followed by EOF. Without it, EOF is sent at once. */
  stdin?: string | Buffer;
  /** Aborting closes the channel like a timeout does. */
  signal?: AbortSignal;
  /** Live output (every chunk, also past the truncation limit). */
  onOutput?: (stream: "stdout" | "stderr", chunk: Buffer) => void;
};

export type UploadOptions = {
  /** Default 0o644. */
  mode?: number;
  /** Default 60 s plus 1 s per MiB. */
  timeoutMs?: number;
};

/** One authenticated SSH connection, reused for the commands of one pipeline tick. */
export interface SshSession {
  /** Fingerprint of the key the host presented (`SHA256:…`); the caller pins it on first contact. */
  readonly hostKeySha256: string;
  /** False once the connection was closed or lost: no command will run over it any more. */
  readonly alive: boolean;
  exec(command: string, options?: ExecOptions): Promise<ExecResult>;
  /** Atomic, checksum-verified file write (see `uploadCommand`). */
  upload(remotePath: string, bytes: Buffer | string, options?: UploadOptions): Promise<void>;
  close(): void;
}

const DEFAULT_READY_TIMEOUT_MS = 20_000;
const DEFAULT_EXEC_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;
/**
 * OpenSSH allows 10 sessions per connection by default (MaxSessions); more concurrent
 * `exec` calls would fail with "open failed", so they wait for a free slot instead.
 */
const MAX_CONCURRENT_CHANNELS = 8;
/** How long a command given up on before its group marker arrived waits for it, to kill it. */
const MARKER_WAIT_MS = 2_000;

/**
 * Opens an SSH connection. The host key is checked before authentication: when a pin is
 * given and the host offers another key, the handshake is aborted and no password or key
 * signature ever leaves the console.
 */
export async function connectSsh(target: SshTarget): Promise<SshSession> {
  const { host, port, username, auth } = target;
  const readyTimeoutMs = target.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS;
  const pinned = target.pinnedHostKey === null ? null : normalizeFingerprint(target.pinnedHostKey);
  const method = auth.kind;

  const client = new ssh2.Client();
  let offered: string | null = null;
  let mismatch: HostKeyMismatchError | null = null;

  const config: ConnectConfig = {
    host,
    port,
    username,
    readyTimeout: readyTimeoutMs,
    keepaliveInterval: 15_000,
    keepaliveCountMax: 4,
    hostVerifier: (key: Buffer): boolean => {
      offered = fingerprintSha256(key);
      if (pinned !== null && offered !== pinned) {
        mismatch = new HostKeyMismatchError({ host, port, pinned, offered });
        return false;
      }
      return true;
    },
    // Straight to the one method we hold: ssh2 would first try "none" (one more round trip and
    // one more authentication attempt in the host's log, refused every time).
    authHandler: [auth.kind === "password" ? "password" : "publickey"],
    ...(auth.kind === "password"
      ? { password: auth.password, tryKeyboard: false }
      : {
          privateKey: auth.privateKey,
          ...(auth.passphrase === undefined ? {} : { passphrase: auth.passphrase }),
        }),
  };

  await new Promise<void>((resolve, reject) => {
    let settled = false;
    const settle = (error: Error | null) => {
      if (settled) return;
      settled = true;
      client.removeListener("ready", onReady);
      client.removeListener("error", onError);
      client.removeListener("close", onClose);
      if (error === null) {
        resolve();
        return;
      }
      client.on("error", () => {});
      client.end();
      reject(error);
    };
    const onReady = () => settle(null);
    const onError = (error: Error & { level?: string; code?: string }) =>
      settle(
        mismatch ?? classifyConnectError(error, { host, port, username, method, readyTimeoutMs }),
      );
    const onClose = () => settle(mismatch ?? new SshConnectError({ host, port, reason: "closed" }));
    client.on("ready", onReady);
    client.on("error", onError);
    client.on("close", onClose);
    try {
      client.connect(config);
      // As OpenSSH's client: TCP_NODELAY. A command is a handful of small packets each way
      // (channel open, exec, EOF); Nagle would hold each behind the host's delayed ACK.
      client.setNoDelay(true);
    } catch (error) {
      // ssh2 parses the private key synchronously; its message never contains the key.
      settle(
        new SshAuthError({ host, port, username, method, reason: "key_unreadable", cause: error }),
      );
    }
  });

  if (offered === null) {
    client.end();
    throw new SshConnectError({
      host,
      port,
      reason: "other",
      detail: "the host presented no host key",
    });
  }
  return new Session(client, host, port, offered);
}

function classifyConnectError(
  error: Error & { level?: string; code?: string },
  ctx: {
    host: string;
    port: number;
    username: string;
    method: SshAuth["kind"];
    readyTimeoutMs: number;
  },
): Error {
  const { host, port } = ctx;
  if (error.level === "client-authentication") {
    return new SshAuthError({
      host,
      port,
      username: ctx.username,
      method: ctx.method,
      cause: error,
    });
  }
  if (error.level === "client-timeout") {
    return new SshConnectError({
      host,
      port,
      reason: "timeout",
      timeoutMs: ctx.readyTimeoutMs,
      cause: error,
    });
  }
  const byCode: Record<string, SshConnectFailure> = {
    ECONNREFUSED: "refused",
    ENOTFOUND: "dns",
    EAI_AGAIN: "dns",
    EAI_NONAME: "dns",
    EHOSTUNREACH: "unreachable",
    ENETUNREACH: "unreachable",
    EHOSTDOWN: "unreachable",
    ENETDOWN: "unreachable",
    ETIMEDOUT: "timeout",
    ECONNRESET: "closed",
    EPIPE: "closed",
  };
  const reason = (error.code === undefined ? undefined : byCode[error.code]) ?? "other";
  const detail =
    reason === "unreachable"
      ? error.code === "ENETUNREACH"
        ? "network unreachable"
        : "no route to host"
      : error.message;
  return new SshConnectError({
    host,
    port,
    reason,
    timeoutMs: ctx.readyTimeoutMs,
    detail,
    cause: error,
  });
}

/** Keeps the first `limit` bytes of a stream and counts the rest. */
class CappedBuffer {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  truncated = false;

  constructor(private readonly limit: number) {}

  push(chunk: Buffer): void {
    const room = this.limit - this.kept;
    if (chunk.length > room) this.truncated = true;
    if (room <= 0) return;
    const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
    this.chunks.push(part);
    this.kept += part.length;
  }

  text(): string {
    return Buffer.concat(this.chunks).toString("utf8");
  }
}

class Session implements SshSession {
  private lost: Error | null = null;
  private closedByUs = false;
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(
    private readonly client: SshClient,
    private readonly host: string,
    private readonly port: number,
    readonly hostKeySha256: string,
  ) {
    // Every exec adds a "close" listener while it runs.
    client.setMaxListeners(MAX_CONCURRENT_CHANNELS + 16);
    client.on("error", (error: Error) => {
      this.lost ??= error;
    });
    client.on("close", () => {
      this.lost ??= new Error(
        this.closedByUs ? "the session was closed" : "the connection was lost",
      );
    });
  }

  get alive(): boolean {
    return this.lost === null;
  }

  async exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    const timeoutMs = options.timeoutMs ?? DEFAULT_EXEC_TIMEOUT_MS;
    if (options.signal?.aborted) {
      throw new SshCommandTimeoutError({
        host: this.host,
        port: this.port,
        command,
        timeoutMs,
        aborted: true,
      });
    }
    await this.acquireChannelSlot();
    try {
      return await this.run(command, options, timeoutMs);
    } finally {
      this.releaseChannelSlot();
    }
  }

  async upload(
    remotePath: string,
    bytes: Buffer | string,
    options: UploadOptions = {},
  ): Promise<void> {
    const data = typeof bytes === "string" ? Buffer.from(bytes, "utf8") : bytes;
    const sha256 = createHash("sha256").update(data).digest("hex");
    const tmpPath = `${remotePath}.clupilot-tmp-${randomBytes(6).toString("hex")}`;
    const command = uploadCommand({ remotePath, tmpPath, mode: options.mode ?? 0o644, sha256 });
    const timeoutMs =
      options.timeoutMs ?? DEFAULT_EXEC_TIMEOUT_MS + Math.ceil(data.length / 1024 / 1024) * 1000;
    const result = await this.exec(command, { stdin: data, timeoutMs, maxOutputBytes: 64 * 1024 });
    const fail = (detail: string) =>
      new SshUploadError({ host: this.host, port: this.port, remotePath, detail });
    if (result.code === UPLOAD_CHECKSUM_MISMATCH_EXIT) {
      throw fail(`the bytes that arrived differ from the bytes sent (${result.stderr.trim()})`);
    }
    if (result.code !== 0) {
      const status =
        result.code === null ? `signal ${result.signal ?? "?"}` : `exit status ${result.code}`;
      throw fail(`${status}: ${result.stderr.trim() || "no error output"}`);
    }
    const remoteSha = result.stdout.trim().split(/\s+/)[0] ?? "";
    if (remoteSha !== sha256) {
      throw fail(`the file on the host has SHA-256 ${remoteSha || "(none)"}, sent ${sha256}`);
    }
  }

  close(): void {
    this.closedByUs = true;
    // A kill of a given-up command must reach the host before the connection goes.
    if (this.pendingKills.size === 0) {
      this.client.end();
      return;
    }
    const deadline = setTimeout(() => this.client.end(), 5_000);
    // A kill may start while another is awaited (a group marker arriving late): all of them.
    const drain = async () => {
      while (this.pendingKills.size > 0) await Promise.allSettled([...this.pendingKills]);
    };
    void drain().then(() => {
      clearTimeout(deadline);
      this.client.end();
    });
  }

  private readonly pendingKills = new Set<Promise<void>>();

  /** Best effort: stops the remote process group of a command we gave up on. */
  private killGroup(pgid: number): void {
    if (this.lost !== null) return;
    const kill = new Promise<void>((resolve) => {
      try {
        this.client.exec(killGroupCommand(pgid), (error, ch) => {
          if (error) return resolve();
          ch.on("data", () => {});
          ch.stderr.on("data", () => {});
          ch.on("close", () => resolve());
          ch.end();
        });
      } catch {
        resolve(); // the connection is going away; nothing more we can do from here
      }
    });
    this.pendingKills.add(kill);
    void kill.finally(() => this.pendingKills.delete(kill));
  }

  private run(command: string, options: ExecOptions, timeoutMs: number): Promise<ExecResult> {
    const { host, port, client } = this;
    const maxOutputBytes = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
    if (this.lost !== null) {
      return Promise.reject(
        new SshChannelError({ host, port, detail: this.lost.message, command }),
      );
    }

    return new Promise<ExecResult>((resolve, reject) => {
      const started = performance.now();
      const stdout = new CappedBuffer(maxOutputBytes);
      const stderr = new CappedBuffer(maxOutputBytes);
      let channel: ClientChannel | null = null;
      let exit: { code: number | null; signal: string | null } | null = null;
      let settled = false;
      // The wrapper's first stderr line names the command's process group (see withGroupMarker).
      let pgid: number | null = null;
      let markerPending: Buffer | null = Buffer.alloc(0);

      const finish = (outcome: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        options.signal?.removeEventListener("abort", onAbort);
        client.removeListener("close", onConnectionClose);
        outcome();
      };
      // Close the channel so the remote side sees the session end, and stop the command's
      // process group: giving up must also stop the remote work, not only our wait. Given up on
      // before the group is known (the channel not open yet, its marker not arrived), the
      // channel stays open until the marker comes — at most MARKER_WAIT_MS — so the kill
      // still finds it.
      let stopping = false;
      let markerWait: { timer: NodeJS.Timeout; done: () => void } | null = null;
      const stopChannel = () => {
        stopping = true;
        if (channel === null) return; // done once the channel opens
        if (pgid !== null || markerPending === null) {
          channel.close();
          if (pgid !== null) this.killGroup(pgid);
          if (markerWait) {
            clearTimeout(markerWait.timer);
            markerWait.done();
          }
          return;
        }
        if (markerWait) return;
        // Closing the session waits for this like for a kill under way.
        let done = () => {};
        const waited = new Promise<void>((resolve) => (done = resolve));
        this.pendingKills.add(waited);
        void waited.finally(() => this.pendingKills.delete(waited));
        markerWait = {
          timer: setTimeout(() => {
            channel?.close();
            done();
          }, MARKER_WAIT_MS),
          done,
        };
      };
      const giveUp = (aborted: boolean) =>
        finish(() => {
          stopChannel();
          reject(new SshCommandTimeoutError({ host, port, command, timeoutMs, aborted }));
        });
      const onAbort = () => giveUp(true);
      const onConnectionClose = () =>
        finish(() =>
          reject(
            new SshChannelError({
              host,
              port,
              detail: "the connection was lost while the command was running",
              command,
            }),
          ),
        );
      const onData = (stream: "stdout" | "stderr", raw: Buffer) => {
        let chunk = raw;
        if (stream === "stderr" && markerPending !== null) {
          const pending: Buffer = Buffer.concat([markerPending, raw]);
          const end = pending.indexOf(10);
          if (end < 0 && pending.length < 64) {
            markerPending = pending;
            return;
          }
          markerPending = null;
          const line = pending.subarray(0, Math.max(end, 0)).toString("utf8");
          if (end >= 0 && line.startsWith(GROUP_MARKER)) {
            pgid = Number(line.slice(GROUP_MARKER.length)) || null;
            chunk = pending.subarray(end + 1);
          } else {
            chunk = pending;
          }
          if (stopping) return stopChannel();
          if (chunk.length === 0) return;
        }
        if (settled) return; // given up on: the rest is nobody's output
        (stream === "stdout" ? stdout : stderr).push(chunk);
        if (options.onOutput === undefined) return;
        try {
          options.onOutput(stream, chunk);
        } catch (error) {
          finish(() => {
            stopChannel();
            reject(error);
          });
        }
      };

      const timer = setTimeout(() => giveUp(false), timeoutMs);
      options.signal?.addEventListener("abort", onAbort, { once: true });
      client.once("close", onConnectionClose);

      try {
        client.exec(withGroupMarker(command), (error, ch) => {
          if (error) {
            finish(() =>
              reject(
                new SshChannelError({
                  host,
                  port,
                  detail: `the host refused to open a channel (${error.message})`,
                  command,
                  cause: error,
                }),
              ),
            );
            return;
          }
          channel = ch;
          ch.on("data", (chunk: Buffer) => onData("stdout", chunk));
          ch.stderr.on("data", (chunk: Buffer) => onData("stderr", chunk));
          if (stopping) {
            // Given up on before the channel opened: the command may be running already.
            stopChannel();
            ch.end();
            return;
          }
          ch.on("exit", (code: number | null, signal?: string) => {
            exit = { code: typeof code === "number" ? code : null, signal: signal ?? null };
          });
          ch.on("error", (channelError: Error) =>
            finish(() => {
              stopChannel();
              reject(
                new SshChannelError({
                  host,
                  port,
                  detail: channelError.message,
                  command,
                  cause: channelError,
                }),
              );
            }),
          );
          ch.on("close", () =>
            finish(() => {
              if (markerPending !== null && markerPending.length > 0) stderr.push(markerPending);
              if (exit === null) {
                reject(
                  new SshChannelError({
                    host,
                    port,
                    detail: "the host closed the channel without reporting an exit status",
                    command,
                  }),
                );
                return;
              }
              resolve({
                code: exit.code,
                signal: exit.signal,
                stdout: stdout.text(),
                stderr: stderr.text(),
                truncated: stdout.truncated || stderr.truncated,
                durationMs: Math.round(performance.now() - started),
              });
            }),
          );
          if (options.stdin === undefined) ch.end();
          else ch.end(options.stdin);
        });
      } catch (error) {
        finish(() =>
          reject(
            new SshChannelError({
              host,
              port,
              detail: error instanceof Error ? error.message : String(error),
              command,
              cause: error,
            }),
          ),
        );
      }
    });
  }

  private acquireChannelSlot(): Promise<void> {
    if (this.active < MAX_CONCURRENT_CHANNELS) {
      this.active += 1;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private releaseChannelSlot(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.active -= 1;
  }
}
