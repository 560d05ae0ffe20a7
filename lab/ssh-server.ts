import { spawn, type ChildProcess } from "node:child_process";
import { createHash, timingSafeEqual } from "node:crypto";
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";

import ssh2 from "ssh2";
import type {
  AuthContext,
  Connection,
  ParsedKey,
  ServerChannel,
  Session,
  Server as SshServer,
} from "ssh2";

import { ChannelOutput } from "./channel-output";
import { listenKeepingPort } from "./listen-port";
import { hostReachable } from "./debian/network";
import { generateEd25519KeyPair } from "./keys";
import { startNodeNamespace, type NodeNamespace } from "./namespace/namespace";
import { acquireToolServer, writeToolServerAddress, type ToolServerLease } from "./tool-server";

// Default import: ssh2 is CommonJS; plain Node ESM cannot see `Server` / `utils` as named exports.
const { Server, utils } = ssh2;

/**
 * The lab's SSH server: real SSH (ssh2's `Server`), real `bash -c` processes. What matters for
 * the product's safety hurts exactly like Debian's OpenSSH (checked side by side against a real
 * sshd in lab/openssh/parity.int.test.ts): when the client closes a channel or the connection
 * drops while a command runs, sshd sends NO signal (there is no pty, so no hang-up); it closes
 * the command's stdin, stdout and stderr. A job that writes to the channel afterwards dies of
 * SIGPIPE, one reading stdin sees EOF, and one that does neither keeps running even without
 * `nohup setsid`. Signal requests from the client are refused for root (OpenSSH: "session
 * signalling requires privilege separation"), so closing a channel never stops remote work.
 */

export type LabSshFaults = {
  /** New TCP connections are reset at once (existing sessions keep working). */
  refuseConnections: boolean;
  /** Every command's connection is cut (TCP destroyed, no SSH goodbye) this long after it starts. */
  dropAfterMs: number | null;
  /** Password authentication is off (`PasswordAuthentication no`): only keys get in. */
  refusePasswords: boolean;
  /**
   * Public keys (SHA-256 fingerprints, `SHA256:…`) refused even when they are in
   * authorized_keys: a host where a newly installed key does not work (a wrong file, a
   * `from=` restriction, a policy the console cannot see).
   */
  refusePublicKeys: string[];
};

export const NO_SSH_FAULTS: Readonly<LabSshFaults> = {
  refuseConnections: false,
  dropAfterMs: null,
  refusePasswords: false,
  refusePublicKeys: [],
};

export type LabSshAuthAttempt = {
  username: string;
  method: string;
  accepted: boolean;
  /** For `publickey`: whether the attempt carried a signature (false = "would you accept this key?"). */
  signed?: boolean;
  at: Date;
};

export type LabSshCommand = {
  command: string;
  pid: number;
  startedAt: Date;
  /** Exit status, or the signal name (`SIGHUP`) that ended the shell, or null while running. */
  exit: number | string | null;
  /** True when the channel went away while the command was running (its pipes were closed). */
  hungUp: boolean;
};

export type LabSshServerOptions = {
  /** The lab host's root folder: what its mount namespace binds over /etc, /var, … */
  root: string;
  /** Real paths the host sees at the same place (a cluster's shared pmxcfs folder). */
  shared?: readonly string[];
  /** Working directory of every command, inside the host: the user's home, as sshd has it. */
  home: string;
  /** OpenSSH private key file; created (ed25519) when missing. */
  hostKeyPath: string;
  /** 0 or undefined = a random free port. */
  port?: number;
  username: string;
  password: string;
  /**
   * The user's `authorized_keys` file (`~/.ssh/authorized_keys` inside the host root). Read on
   * every public-key attempt, like sshd: a key appended or removed over SSH counts at once.
   */
  authorizedKeysFile: string;
  /** Lines appended to the authorized_keys file at start unless already there. */
  authorizedKeys?: readonly string[];
  /** Complete environment of every command (nothing is inherited from the lab's process). */
  env: Readonly<Record<string, string>>;
  faults?: LabSshFaults;
};

type HostKey = { pem: string; sha256: string };

type RunningCommand = {
  pgid: number;
  finished: boolean;
  connection: Connection;
  child: ChildProcess;
};

export class LabSshServer {
  readonly host = "127.0.0.1" as const;
  readonly faults: LabSshFaults;
  readonly authAttempts: LabSshAuthAttempt[] = [];
  readonly commands: LabSshCommand[] = [];

  private readonly options: LabSshServerOptions;
  private hostKey: HostKey;
  private ssh: SshServer;
  private listener: net.Server | null = null;
  private readonly sockets = new Set<net.Socket>();
  private readonly running = new Set<RunningCommand>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private currentPort: number;
  /** Listened before: a reboot comes back to the same port. */
  private listened = false;
  /** The simulated tools' server, held while this host answers (lab/tool-server). */
  private tools: ToolServerLease | null = null;
  /** The host's mount namespace: every command runs in it; made anew at every (re)start. */
  private ns: NodeNamespace | null = null;

  private constructor(options: LabSshServerOptions) {
    this.options = options;
    this.faults = options.faults ?? { ...NO_SSH_FAULTS, refusePublicKeys: [] };
    for (const line of options.authorizedKeys ?? []) this.authorizeKey(line);
    this.hostKey = loadOrCreateHostKey(options.hostKeyPath);
    this.ssh = this.createSshServer();
    this.currentPort = options.port ?? 0;
  }

  static async start(options: LabSshServerOptions): Promise<LabSshServer> {
    const server = new LabSshServer(options);
    try {
      await server.boot();
    } catch (error) {
      await server.stop();
      throw error;
    }
    return server;
  }

  /** The host's namespace while it runs: run a program inside it, list what runs there. */
  get namespace(): NodeNamespace {
    if (this.ns === null) throw new Error(`lab: the host in ${this.options.root} is not running`);
    return this.ns;
  }

  /** The namespace's `mnt:[…]` while the host runs, else null. */
  get namespaceId(): string | null {
    return this.ns?.id ?? null;
  }

  get port(): number {
    return this.currentPort;
  }

  get hostKeySha256(): string {
    return this.hostKey.sha256;
  }

  /**
   * Appends an `ssh-ed25519 AAAA… comment` line to the user's authorized_keys file (as an
   * operator pasting it would), unless the exact line is already there.
   */
  authorizeKey(publicKeyOpenSsh: string): void {
    const line = publicKeyOpenSsh.trim();
    const parsed = utils.parseKey(line);
    if (parsed instanceof Error)
      throw new Error(`lab: cannot parse authorized key: ${parsed.message}`);
    const file = this.options.authorizedKeysFile;
    mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    const current = existsSync(file) ? readFileSync(file, "utf8") : "";
    if (current.split("\n").some((existing) => existing.trim() === line)) return;
    const separator = current === "" || current.endsWith("\n") ? "" : "\n";
    appendFileSync(file, `${separator}${line}\n`, { mode: 0o600 });
  }

  /**
   * New host key on disk, used for every connection from now on (open sessions keep theirs,
   * as after an sshd reload). What a reinstalled host, or an interception, looks like.
   * Returns the new key's SHA-256 fingerprint.
   */
  async rotateHostKey(): Promise<string> {
    this.hostKey = generateHostKey(this.options.hostKeyPath);
    this.ssh = this.createSshServer();
    return this.hostKey.sha256;
  }

  /**
   * Closes the listener and every connection, kills every process the lab host runs. `silent`
   * is called once the host answers no more (new connections refused), before the killing.
   */
  async stop(silent?: () => void): Promise<void> {
    const listener = this.listener;
    this.listener = null;
    // Refuse new connections first: killing what the host runs takes a moment.
    const closed =
      listener === null
        ? Promise.resolve()
        : new Promise<void>((resolve) => listener.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    silent?.();
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    // The tool server first, so no tool starts a child inside while the host is emptied.
    const tools = this.tools;
    this.tools = null;
    await tools?.release();
    // Every process of the host is in its namespace, whatever group or session it made
    // (`nohup setsid`, `env -i`): what it holds is what dies. Never a kill(-pgid) by number.
    const ns = this.ns;
    this.ns = null;
    await ns?.close();
    this.running.clear();
    await closed;
  }

  /** stop() and listen again on the same port, reading the host key from disk again. */
  async restart(): Promise<void> {
    await this.stop();
    this.hostKey = loadOrCreateHostKey(this.options.hostKeyPath);
    this.ssh = this.createSshServer();
    await this.boot();
  }

  /**
   * A fresh namespace (a boot leaves nothing mounted from before), the tool server told about
   * it (the host's commands find it through `<root>/.lab/tool-server`), then SSH answers.
   */
  private async boot(): Promise<void> {
    this.ns = await startNodeNamespace(this.options.root, {
      ...(this.options.shared === undefined ? {} : { shared: this.options.shared }),
    });
    this.tools = await acquireToolServer({ binds: this.ns.binds, entry: this.ns.entry });
    writeToolServerAddress(this.options.root, this.tools);
    await this.listen();
  }

  private async listen(): Promise<void> {
    const listener = net.createServer((socket) => {
      // As sshd: OpenSSH sets TCP_NODELAY on every session's connection (packet.c,
      // ssh_packet_set_interactive → set_nodelay). Without it each command's small replies
      // (exit status, EOF, close) wait out the client's delayed ACK: ~170 ms per command here.
      socket.setNoDelay(true);
      this.onSocket(socket);
    });
    this.currentPort = await listenKeepingPort(listener, this.currentPort, this.host, {
      returns: this.listened,
    });
    this.listened = true;
    listener.on("error", () => {});
    this.listener = listener;
  }

  private onSocket(socket: net.Socket): void {
    // A host whose running network lost its address (a broken bridge) is not there to answer.
    if (this.faults.refuseConnections || !hostReachable(this.options.root)) {
      socket.resetAndDestroy();
      return;
    }
    socket.on("error", () => {});
    this.sockets.add(socket);
    socket.once("close", () => this.sockets.delete(socket));
    this.ssh.injectSocket(socket);
  }

  private createSshServer(): SshServer {
    const server = new Server(
      { hostKeys: [this.hostKey.pem], ident: "OpenSSH_10.0p2 Debian-7" },
      (connection, info) => this.onConnection(connection, info),
    );
    server.on("error", () => {});
    return server;
  }

  private onConnection(connection: Connection, info: { ip: string; port: number }): void {
    connection.on("error", () => {});
    connection.on("authentication", (ctx) => this.authenticate(ctx));
    connection.on("close", () => {
      for (const run of this.running) {
        if (run.connection === connection && !run.finished) closePipes(run.child);
      }
    });
    const socketOf = () =>
      [...this.sockets].find((s) => s.remotePort === info.port && s.remoteAddress === info.ip);
    connection.on("ready", () => {
      connection.on("session", (accept) => {
        const session = accept();
        this.onSession(session, connection, socketOf);
      });
    });
  }

  private authenticate(ctx: AuthContext): void {
    const userOk = safeEqual(ctx.username, this.options.username);
    let accepted = false;
    let signed: boolean | undefined;
    switch (ctx.method) {
      case "password":
        accepted =
          !this.faults.refusePasswords && safeEqual(ctx.password, this.options.password) && userOk;
        break;
      case "publickey": {
        signed = ctx.signature !== undefined;
        const refused = this.faults.refusePublicKeys.includes(sha256OfBlob(ctx.key.data));
        const key = refused
          ? undefined
          : readAuthorizedKeys(this.options.authorizedKeysFile).find((candidate) =>
              candidate.getPublicSSH().equals(ctx.key.data),
            );
        // Without a signature the client only asks whether the key would do; with one,
        // the signature over the session data must verify against the authorized key.
        accepted =
          userOk &&
          key !== undefined &&
          (ctx.signature === undefined ||
            (ctx.blob !== undefined && key.verify(ctx.blob, ctx.signature, ctx.hashAlgo) === true));
        break;
      }
      default:
        accepted = false;
    }
    this.authAttempts.push({
      username: ctx.username,
      method: ctx.method,
      accepted,
      ...(signed === undefined ? {} : { signed }),
      at: new Date(),
    });
    if (accepted) ctx.accept();
    else ctx.reject(this.faults.refusePasswords ? ["publickey"] : ["password", "publickey"]);
  }

  private onSession(
    session: Session,
    connection: Connection,
    socketOf: () => net.Socket | undefined,
  ): void {
    let run: RunningCommand | null = null;
    const start = (channel: ServerChannel, command: string | null) => {
      run = this.runCommand(channel, command, connection);
      const dropAfterMs = this.faults.dropAfterMs;
      if (dropAfterMs !== null) {
        this.later(dropAfterMs, () => socketOf()?.destroy());
      }
    };
    session.on("exec", (accept, _reject, info) => start(accept(), info.command));
    // A shell without a terminal: bash reading commands from stdin, as `ssh host < script`.
    session.on("shell", (accept) => start(accept(), null));
    session.on("pty", (_accept, reject) => reject?.());
    session.on("env", (_accept, reject) => reject?.());
    session.on("sftp", (_accept, reject) => reject());
    session.on("subsystem", (_accept, reject) => reject());
    session.on("signal", (accept, reject, info) => {
      // OpenSSH runs root sessions without a privilege-separated child and refuses their
      // signal requests ("session signalling requires privilege separation").
      if (this.options.username === "root") {
        reject?.();
        return;
      }
      accept?.();
      const name = info.name.toUpperCase().replace(/^SIG/, "");
      if (run !== null && !run.finished) killGroup(run.pgid, `SIG${name}` as NodeJS.Signals);
    });
  }

  private runCommand(
    channel: ServerChannel,
    command: string | null,
    connection: Connection,
  ): RunningCommand | null {
    const ns = this.ns;
    if (ns === null) {
      channel.stderr.write("lab: the host is shutting down\n");
      channel.exit(255);
      channel.end();
      return null;
    }
    const bash = ns.command(
      ["/bin/bash", ...(command === null ? [] : ["-c", command])],
      this.options.home,
    );
    // nsenter enters the namespace and execs bash: the PID is bash's, as sshd's child is.
    const child = spawn(bash.file, bash.args, {
      env: { ...this.options.env } as NodeJS.ProcessEnv,
      // Its own process group, like a login session: the group is what a hang-up hits.
      detached: true,
      stdio: "pipe",
    });
    channel.on("error", () => {});
    if (child.pid === undefined) {
      child.on("error", () => {});
      channel.stderr.write("lab: could not start bash\n");
      channel.exit(127);
      channel.end();
      return null;
    }
    const pgid = child.pid;
    const record: LabSshCommand = {
      command: command ?? "<shell>",
      pid: pgid,
      startedAt: new Date(),
      exit: null,
      hungUp: false,
    };
    this.commands.push(record);
    const run: RunningCommand = { pgid, finished: false, connection, child };
    this.running.add(run);
    let channelOpen = true;

    const output = new ChannelOutput(channel);
    output.add("stdout", child.stdout);
    output.add("stderr", child.stderr);
    child.stdin.on("error", () => {});
    channel.pipe(child.stdin);
    child.on("error", () => {});

    // "close", not "exit": like sshd, the session ends when the command's output pipes are
    // closed, so a background job that keeps stdout open keeps the channel open too.
    child.on("close", (code, signal) => {
      run.finished = true;
      this.running.delete(run);
      record.exit = code ?? signal ?? null;
      if (!channelOpen) return;
      // Like sshd: all output first, then the exit status, then EOF/close. Closing while a
      // (window-limited) write is still parked would lose the output's tail.
      void output.drained().then(() => {
        if (!channelOpen) return;
        if (code !== null) channel.exit(code);
        else channel.exit(signal ?? "SIGKILL", false, "");
        channel.end();
      });
    });
    channel.on("close", () => {
      channelOpen = false;
      output.stop();
      if (!run.finished) {
        record.hungUp = true;
        closePipes(child);
      }
    });
    return run;
  }

  private later(ms: number, action: () => void): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      action();
    }, ms);
    this.timers.add(timer);
  }
}

/**
 * What sshd does when a channel goes away under a running command: it closes its ends of the
 * command's pipes. No signal: the next write dies of SIGPIPE, a read from stdin gets EOF.
 */
function closePipes(child: ChildProcess): void {
  child.stdin?.destroy();
  child.stdout?.destroy();
  child.stderr?.destroy();
}

function killGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // the group is gone
  }
}

function safeEqual(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  // Compare equal-length buffers either way so the length does not leak through timing.
  return timingSafeEqual(a.length === b.length ? a : b, b) && a.length === b.length;
}

/**
 * The keys of an authorized_keys file, read afresh (sshd reads it on every attempt). Supported:
 * one `type base64 [comment]` per line. Skipped: blank lines, `#` comments, lines that do not
 * parse, and lines starting with options (`from="…"`, `command="…"`, `restrict`, …): the lab
 * does not enforce options, and accepting such a key without its restriction would let in
 * more than sshd does. A missing file means no keys.
 */
export function readAuthorizedKeys(file: string): ParsedKey[] {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return [];
  }
  const keys: ParsedKey[] = [];
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const parsed = utils.parseKey(line);
    if (parsed instanceof Error) continue;
    const key = Array.isArray(parsed) ? parsed[0] : parsed;
    if (key !== undefined) keys.push(key);
  }
  return keys;
}

function sha256OfBlob(blob: Buffer): string {
  const digest = createHash("sha256").update(blob).digest("base64");
  return `SHA256:${digest.replace(/=+$/, "")}`;
}

function sha256Fingerprint(pem: string): string {
  const parsed = utils.parseKey(pem);
  if (parsed instanceof Error) throw new Error(`lab: unreadable host key: ${parsed.message}`);
  const key = Array.isArray(parsed) ? (parsed[0] as ParsedKey) : parsed;
  return sha256OfBlob(key.getPublicSSH());
}

function generateHostKey(file: string): HostKey {
  const pair = generateEd25519KeyPair("root@lab");
  writeFileSync(file, pair.private, { mode: 0o600 });
  writeFileSync(`${file}.pub`, `${pair.public}\n`);
  return { pem: pair.private, sha256: sha256Fingerprint(pair.private) };
}

function loadOrCreateHostKey(file: string): HostKey {
  if (!existsSync(file)) return generateHostKey(file);
  const pem = readFileSync(file, "utf8");
  return { pem, sha256: sha256Fingerprint(pem) };
}
