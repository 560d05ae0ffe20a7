/**
 * Typed SSH failures. Each message says what happened and what the operator can check; none
 * of them ever contains a password, a private key or a passphrase (only user, address, port,
 * and a shortened command text).
 */

/** Common base so callers can `instanceof SshError` for "anything SSH went wrong". */
export class SshError extends Error {
  override readonly name: string = "SshError";
  readonly host: string;
  readonly port: number;

  constructor(host: string, port: number, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.host = host;
    this.port = port;
  }
}

export type SshConnectFailure = "refused" | "dns" | "unreachable" | "timeout" | "closed" | "other";

/** The TCP connection or the SSH handshake did not come up. Nothing was authenticated. */
export class SshConnectError extends SshError {
  override readonly name = "SshConnectError";
  readonly reason: SshConnectFailure;

  constructor(init: {
    host: string;
    port: number;
    reason: SshConnectFailure;
    timeoutMs?: number;
    detail?: string;
    cause?: unknown;
  }) {
    super(init.host, init.port, connectMessage(init), { cause: init.cause });
    this.reason = init.reason;
  }
}

function connectMessage(init: {
  host: string;
  port: number;
  reason: SshConnectFailure;
  timeoutMs?: number;
  detail?: string;
}): string {
  const address = `${init.host}:${init.port}`;
  switch (init.reason) {
    case "refused":
      return (
        `Could not connect to ${address}: connection refused. ` +
        `Check that the SSH server is running on the host and listens on port ${init.port}.`
      );
    case "dns":
      return (
        `Could not resolve the host name "${init.host}" (SSH port ${init.port}). ` +
        "Check the spelling of the address, or enter an IP address."
      );
    case "unreachable":
      return (
        `Could not reach ${address}: ${init.detail ?? "no route to host"}. ` +
        "Check the address, and the routing and firewalls between the console and the host."
      );
    case "timeout":
      return (
        `No SSH answer from ${address} within ${formatDuration(init.timeoutMs ?? 0)}. ` +
        `Check that the host is up, that the address is right and that port ${init.port} is not filtered by a firewall.`
      );
    case "closed":
      return (
        `The connection to ${address} was closed before the SSH handshake completed. ` +
        `Check that port ${init.port} is an SSH server and that it accepts connections from the console (firewall, fail2ban, MaxStartups).`
      );
    case "other":
      return `Could not open an SSH connection to ${address}: ${init.detail ?? "unknown error"}.`;
  }
}

export type SshAuthFailure = "refused" | "key_unreadable";

/** The host answered but did not accept the credential. */
export class SshAuthError extends SshError {
  override readonly name = "SshAuthError";
  readonly username: string;
  readonly reason: SshAuthFailure;

  constructor(init: {
    host: string;
    port: number;
    username: string;
    method: "password" | "private_key";
    reason?: SshAuthFailure;
    cause?: unknown;
  }) {
    const reason = init.reason ?? "refused";
    const who = `${init.username}@${init.host}:${init.port}`;
    const message =
      reason === "key_unreadable"
        ? `The private key for ${who} could not be read: wrong passphrase or unsupported key format. ` +
          "Paste the key in OpenSSH or PEM format and check its passphrase."
        : `SSH authentication refused for ${who} (${init.method === "password" ? "password" : "private key"}). ` +
          (init.method === "password"
            ? "Check the user name and the password"
            : "Check the user name and that the public key is in the user's authorized_keys") +
          (init.username === "root"
            ? "; for root, also check PermitRootLogin in sshd_config."
            : ".");
    super(init.host, init.port, message, { cause: init.cause });
    this.username = init.username;
    this.reason = reason;
  }
}

/** A command did not finish in time (or its caller gave up); its channel was closed. */
export class SshCommandTimeoutError extends SshError {
  override readonly name = "SshCommandTimeoutError";
  readonly command: string;
  readonly timeoutMs: number;
  readonly aborted: boolean;

  constructor(init: {
    host: string;
    port: number;
    command: string;
    timeoutMs: number;
    aborted?: boolean;
  }) {
    const what = init.aborted
      ? "was aborted by the console"
      : `did not finish within ${formatDuration(init.timeoutMs)}`;
    super(
      init.host,
      init.port,
      `Command on ${init.host}:${init.port} ${what}; its SSH channel was closed: ${abbreviateCommand(init.command)}`,
    );
    this.command = init.command;
    this.timeoutMs = init.timeoutMs;
    this.aborted = init.aborted ?? false;
  }
}

/** The connection broke, or the host refused to open a channel for a command. */
export class SshChannelError extends SshError {
  override readonly name: string = "SshChannelError";
  readonly command: string | null;

  constructor(init: {
    host: string;
    port: number;
    detail: string;
    command?: string;
    cause?: unknown;
  }) {
    super(
      init.host,
      init.port,
      `SSH channel to ${init.host}:${init.port} failed: ${init.detail}` +
        (init.command === undefined ? "" : ` (command: ${abbreviateCommand(init.command)})`),
      { cause: init.cause },
    );
    this.command = init.command ?? null;
  }
}

/** An uploaded file did not arrive intact (its SHA-256 on the host differs). */
export class SshUploadError extends SshError {
  override readonly name = "SshUploadError";
  readonly remotePath: string;

  constructor(init: { host: string; port: number; remotePath: string; detail: string }) {
    super(
      init.host,
      init.port,
      `Upload of ${init.remotePath} to ${init.host}:${init.port} failed: ${init.detail}. ` +
        "The previous file (if any) was left in place.",
    );
    this.remotePath = init.remotePath;
  }
}

/** One line, at most 200 characters: commands can be long scripts. */
export function abbreviateCommand(command: string): string {
  const oneLine = command.replace(/\s*\n\s*/g, " ⏎ ").trim();
  return oneLine.length > 200 ? `${oneLine.slice(0, 199)}…` : oneLine;
}

function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  const seconds = ms / 1000;
  return Number.isInteger(seconds) ? `${seconds} s` : `${seconds.toFixed(1)} s`;
}
