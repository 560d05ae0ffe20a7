import net from "node:net";

import { NutLineReader, NutLineTooLong } from "./line-reader";
import {
  NutGrammarError,
  nutErrorCode,
  parseVarLines,
  quoteNutWord,
  splitNutWords,
} from "./protocol";

export type NutFailureKind =
  | "refused"
  | "unresolved"
  | "unreachable"
  | "timeout"
  | "closed"
  | "protocol"
  | "access-denied"
  /** upsd answered `ERR <code>` for the UPS; the connection itself is fine. */
  | "answer";

/** Why a request to upsd got no usable answer; the message is one line an operator can act on. */
export class NutFailure extends Error {
  override readonly name = "NutFailure";

  constructor(
    readonly kind: NutFailureKind,
    message: string,
    /** The `ERR` code upsd answered, when it answered one. */
    readonly code: string | null = null,
    /** The command upsd refused (`USERNAME`, `PASSWORD`, `LOGIN`, `LIST`), when it refused one. */
    readonly command: string | null = null,
  ) {
    super(message);
  }
}

export type NutCredentials = { username: string; password: string };

export type NutConnectionOptions = {
  host: string;
  port: number;
  /** Sent as USERNAME/PASSWORD, then checked by LOGIN (upsd checks a password nowhere else). */
  credentials?: NutCredentials;
  /** Wait before reconnecting after a failure: `initialMs`, doubling up to `maxMs`. */
  reconnectBackoff?: { initialMs: number; maxMs: number };
};

export const DEFAULT_RECONNECT_BACKOFF = { initialMs: 250, maxMs: 5000 };
const MAX_LINE_LENGTH = 64 * 1024;
const MAX_LIST_LINES = 10_000;
const CLOSE_GRACE_MS = 1000;
/** How long a LOGOUT may wait for upsd's answer before the connection is cut instead. */
const LOGOUT_DEADLINE_MS = 2000;
const UPS_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * One persistent connection to one upsd (TCP 3493), shared by every UPS read from that server
 * with the same credentials. Requests are serialised (the protocol is strictly one answer per
 * request, in order); every request has a deadline, and a request that misses it drops the
 * connection (a late answer would be read as the answer to the next request). After a failure
 * the next attempt waits a backoff, so a dead server is not hammered once per UPS per second.
 *
 * With credentials the connection does what upsmon does: USERNAME, PASSWORD, then LOGIN for the
 * first UPS read on it. LOGIN is the only command where upsd checks the password (it needs
 * `upsmon secondary` or `primary` in upsd.users), so a wrong password is seen at once instead of
 * reading anonymously; the UPS's primary upsmon then counts the console among the systems it
 * waits for before cutting the power. upsd allows one LOGIN per connection.
 *
 * Once the console no longer needs a UPS (every target it protects on it is down, `logout`), it
 * logs out as a secondary upsmon does once it shuts down — LOGOUT ends the connection, upsd has
 * no other way to undo a LOGIN — and reads on over a connection that does not LOGIN for that UPS,
 * until `loginAgain`: the primary then waits exactly as long as the console needs.
 */
export class NutConnection {
  /** `upsd at <host>:<port>`, the start of every failure message. */
  readonly where: string;
  private socket: net.Socket | null = null;
  private reader: NutLineReader | null = null;
  /** The UPS this connection sent LOGIN for (one per connection), or null. */
  private loggedInAs: string | null = null;
  /** UPSes the console logged out of: read without LOGIN until `loginAgain`. */
  private readonly loggedOut = new Set<string>();
  private tail: Promise<unknown> = Promise.resolve();
  private lastFailure: { error: NutFailure; retryAt: number } | null = null;
  private readonly backoff: { initialMs: number; maxMs: number };
  private backoffMs: number;

  constructor(private readonly options: NutConnectionOptions) {
    const host = options.host.includes(":") ? `[${options.host}]` : options.host;
    this.where = `upsd at ${host}:${options.port}`;
    this.backoff = options.reconnectBackoff ?? DEFAULT_RECONNECT_BACKOFF;
    this.backoffMs = this.backoff.initialMs;
  }

  /**
   * `LIST VAR <ups>`: every variable of the UPS. Resolves or rejects with a NutFailure within
   * `deadlineMs`, counted from this call (time spent behind another request included).
   */
  listVar(ups: string, deadlineMs: number): Promise<Map<string, string>> {
    if (!UPS_NAME.test(ups)) {
      return Promise.reject(new Error(`not a NUT UPS name: ${JSON.stringify(ups)}`));
    }
    const deadlineAt = performance.now() + deadlineMs;
    const timeout = () =>
      new NutFailure("timeout", `${this.where} did not answer within ${seconds(deadlineMs)}`);
    return this.serialised(deadlineAt, timeout, async () => {
      const reused = this.socket !== null;
      try {
        return await this.listVarOnce(ups, deadlineAt, timeout);
      } catch (error) {
        // The server closed a kept-open connection just as it was used (upsd restarted, or
        // dropped it as idle): that says nothing about the server now, so ask once more on a
        // fresh connection. LIST VAR changes nothing, so asking twice is harmless.
        if (!reused || !(error instanceof NutFailure) || error.kind !== "closed") throw error;
        this.lastFailure = null;
        return this.listVarOnce(ups, deadlineAt, timeout);
      }
    });
  }

  private async listVarOnce(
    ups: string,
    deadlineAt: number,
    timeout: () => NutFailure,
  ): Promise<Map<string, string>> {
    await this.ensureSession(ups, deadlineAt, timeout);
    const command = `LIST VAR ${ups}`;
    const first = await this.request(command, deadlineAt, timeout);
    this.throwOnErr(first, ups);
    if (first !== `BEGIN ${command}`) throw this.protocolFailure(command, first);
    const lines: string[] = [];
    for (;;) {
      const line = await this.readLine(deadlineAt, timeout);
      if (line === `END ${command}`) break;
      if (lines.push(line) > MAX_LIST_LINES)
        throw this.protocolFailure(command, "(too many lines)");
    }
    let vars: Map<string, string>;
    try {
      vars = parseVarLines(ups, lines);
    } catch (error) {
      if (error instanceof NutGrammarError) throw this.protocolFailure(command, error.message);
      throw error;
    }
    this.succeeded();
    return vars;
  }

  /**
   * Ends the console's LOGIN for this UPS, after the request in flight: says LOGOUT (upsd counts
   * the login out before it answers `OK Goodbye`, server/netuser.c) and closes the connection —
   * or just closes it when upsd does not answer, which ends the login as well. Later requests
   * reconnect and read the UPS without LOGIN. Resolves once the login has ended; never rejects.
   */
  async logout(ups: string): Promise<void> {
    this.loggedOut.add(ups);
    // Not behind the requests' deadlines: however late, the login must end.
    const run = this.tail.then(() => this.endLogin(ups));
    this.tail = run.catch(() => {});
    await run.catch(() => {});
  }

  /** The console needs the UPS again: the next request for it logs in (if none other did). */
  loginAgain(ups: string): void {
    this.loggedOut.delete(ups);
  }

  private async endLogin(ups: string): Promise<void> {
    const socket = this.socket;
    if (this.loggedInAs !== ups || socket === null) return;
    const deadlineAt = performance.now() + LOGOUT_DEADLINE_MS;
    try {
      await this.request("LOGOUT", deadlineAt, () => this.closedFailure("no answer to LOGOUT"));
    } catch {
      // The connection failed and was dropped: its login ended with it, which is all a logout
      // is for. Whether the server still answers is for the next read to find out, not a
      // reason to make it wait a backoff (it would read as an unreachable UPS mid-outage).
      this.lastFailure = null;
    }
    socket.destroy();
    if (this.socket === socket) this.forgetSocket();
  }

  /** Says LOGOUT and closes the socket, after the request in flight. A later request reconnects. */
  async close(): Promise<void> {
    await this.tail;
    const socket = this.socket;
    this.forgetSocket();
    this.lastFailure = null;
    this.backoffMs = this.backoff.initialMs;
    if (socket === null || socket.destroyed) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => socket.destroy(), CLOSE_GRACE_MS);
      socket.once("close", () => {
        clearTimeout(timer);
        resolve();
      });
      socket.end("LOGOUT\n");
    });
  }

  private serialised<T>(
    deadlineAt: number,
    timeout: () => NutFailure,
    operation: () => Promise<T>,
  ): Promise<T> {
    const run = this.tail.then(() => {
      if (performance.now() >= deadlineAt) throw timeout();
      return operation();
    });
    this.tail = run.catch(() => {});
    // The caller's deadline holds even while an earlier request still occupies the connection.
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(timeout()),
        Math.max(0, deadlineAt - performance.now()),
      );
      run.then(
        (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        (error: unknown) => {
          clearTimeout(timer);
          reject(error);
        },
      );
    });
  }

  private async ensureSession(
    ups: string,
    deadlineAt: number,
    timeout: () => NutFailure,
  ): Promise<void> {
    const credentials = this.options.credentials;
    if (this.socket === null) {
      const failure = this.lastFailure;
      if (failure !== null && performance.now() < failure.retryAt) {
        const wait = seconds(failure.retryAt - performance.now());
        throw new NutFailure(
          failure.error.kind,
          `${failure.error.message} (next attempt in ${wait})`,
          failure.error.code,
          failure.error.command,
        );
      }
      await this.connect(deadlineAt);
      if (credentials !== undefined) {
        await this.expectOk(`USERNAME ${quoteNutWord(credentials.username)}`, deadlineAt, timeout);
        await this.expectOk(`PASSWORD ${quoteNutWord(credentials.password)}`, deadlineAt, timeout);
      }
    }
    if (credentials === undefined || this.loggedInAs !== null || this.loggedOut.has(ups)) return;
    const answer = await this.request(`LOGIN ${ups}`, deadlineAt, timeout);
    const code = nutErrorCode(safeWords(answer));
    if (answer === "OK" || code === "ALREADY-LOGGED-IN") {
      this.loggedInAs = ups;
      return;
    }
    if (code === "ACCESS-DENIED") throw this.drop(this.accessDenied("LOGIN"));
    if (code !== null) throw this.answerFailure(code, ups);
    throw this.protocolFailure(`LOGIN ${ups}`, answer);
  }

  private async expectOk(
    command: string,
    deadlineAt: number,
    timeout: () => NutFailure,
  ): Promise<void> {
    const verb = command.split(" ")[0]!;
    const answer = await this.request(command, deadlineAt, timeout);
    if (answer === "OK") return;
    const code = nutErrorCode(safeWords(answer));
    if (code === null) throw this.protocolFailure(verb, answer);
    throw this.drop(
      new NutFailure(
        "access-denied",
        `${this.where} refused ${verb} for user "${this.options.credentials?.username}" (ERR ${code}): check the NUT user name and password`,
        code,
        verb,
      ),
    );
  }

  private async connect(deadlineAt: number): Promise<void> {
    const { host, port } = this.options;
    const socket = net.connect({ host, port });
    try {
      await new Promise<void>((resolve, reject) => {
        const remaining = Math.max(0, deadlineAt - performance.now());
        const timer = setTimeout(() => {
          socket.destroy();
          reject(
            new NutFailure(
              "timeout",
              `${this.where} did not accept the connection within ${seconds(remaining)}: check the address, and firewalls between the console and the NUT server`,
            ),
          );
        }, remaining);
        socket.once("connect", () => {
          clearTimeout(timer);
          socket.removeAllListeners("error");
          resolve();
        });
        socket.once("error", (error: NodeJS.ErrnoException) => {
          clearTimeout(timer);
          reject(this.connectFailure(error));
        });
      });
    } catch (error) {
      socket.destroy();
      throw this.drop(error as NutFailure);
    }
    socket.setNoDelay(true);
    this.socket = socket;
    this.loggedInAs = null;
    this.reader = new NutLineReader(socket, { maxLineLength: MAX_LINE_LENGTH }, () => {
      // An idle connection upsd closed (it drops clients silent for a while): the next
      // request reconnects.
      if (this.socket === socket) this.forgetSocket();
    });
  }

  private async request(
    line: string,
    deadlineAt: number,
    timeout: () => NutFailure,
  ): Promise<string> {
    const socket = this.socket;
    if (socket === null) throw this.drop(this.closedFailure("closed"));
    socket.write(`${line}\n`);
    return this.readLine(deadlineAt, timeout);
  }

  private async readLine(deadlineAt: number, timeout: () => NutFailure): Promise<string> {
    const reader = this.reader;
    if (reader === null) throw this.drop(this.closedFailure("closed"));
    try {
      return await reader.next(deadlineAt, timeout);
    } catch (error) {
      if (error instanceof NutFailure) throw this.drop(error);
      if (error instanceof NutLineTooLong) throw this.protocolFailure("a request", error.message);
      throw this.drop(this.closedFailure(error instanceof Error ? error.message : String(error)));
    }
  }

  private throwOnErr(line: string, ups: string): void {
    const code = nutErrorCode(safeWords(line));
    if (code === null) return;
    if (code === "ACCESS-DENIED" && this.options.credentials !== undefined) {
      throw this.drop(this.accessDenied("LIST"));
    }
    throw this.answerFailure(code, ups);
  }

  /** upsd answered for the UPS: the connection works, only this UPS has no reading. */
  private answerFailure(code: string, ups: string): NutFailure {
    this.succeeded();
    const what: Record<string, string> = {
      "DATA-STALE": `the driver has no fresh data from the UPS (check the UPS's cable or network card and the driver's log)`,
      "DRIVER-NOT-CONNECTED": `the UPS's driver is not running (start it with upsdrvctl start and check its log)`,
      "UNKNOWN-UPS": `it serves no UPS of that name (upsc -l ${this.options.host}:${this.options.port} lists them)`,
      "ACCESS-DENIED": `the server does not let the console read this UPS (check upsd's access settings)`,
    };
    const why = what[code];
    return new NutFailure(
      "answer",
      `${this.where} answered ERR ${code} for UPS ${ups}${why === undefined ? "" : `: ${why}`}`,
      code,
    );
  }

  private accessDenied(command: string): NutFailure {
    return new NutFailure(
      "access-denied",
      `${this.where} refused the login of user "${this.options.credentials?.username}" (ERR ACCESS-DENIED): check the password, and that upsd.users gives this user "upsmon secondary"`,
      "ACCESS-DENIED",
      command,
    );
  }

  private protocolFailure(command: string, answer: string): NutFailure {
    return this.drop(
      new NutFailure(
        "protocol",
        `${this.where} gave an answer the NUT protocol does not allow to ${command}: ${answer.slice(0, 200)}`,
      ),
    );
  }

  private closedFailure(detail: string): NutFailure {
    return new NutFailure("closed", `${this.where} closed the connection (${detail})`);
  }

  private connectFailure(error: NodeJS.ErrnoException): NutFailure {
    switch (error.code) {
      case "ECONNREFUSED":
        return new NutFailure(
          "refused",
          `${this.where} refused the connection: check that upsd runs and LISTENs on this address and port`,
        );
      case "ENOTFOUND":
      case "EAI_AGAIN":
      case "EAI_NONAME":
        return new NutFailure(
          "unresolved",
          `${this.where}: the host name could not be resolved; check the address`,
        );
      default:
        return new NutFailure(
          "unreachable",
          `${this.where} could not be reached (${error.code ?? error.message}): check the address and the network`,
        );
    }
  }

  /** Drops the connection after a failure and schedules the next attempt. */
  private drop(error: NutFailure): NutFailure {
    this.socket?.destroy();
    this.forgetSocket();
    this.lastFailure = { error, retryAt: performance.now() + this.backoffMs };
    this.backoffMs = Math.min(this.backoffMs * 2, this.backoff.maxMs);
    return error;
  }

  private succeeded(): void {
    this.lastFailure = null;
    this.backoffMs = this.backoff.initialMs;
  }

  private forgetSocket(): void {
    this.socket = null;
    this.reader = null;
    this.loggedInAs = null;
  }
}

/** The words of an answer line, or none when it breaks the grammar (then it is no ERR line). */
function safeWords(line: string): string[] {
  try {
    return splitNutWords(line);
  } catch {
    return [];
  }
}

function seconds(ms: number): string {
  const value = Math.max(0, ms) / 1000;
  return `${Number.isInteger(value) ? value : value.toFixed(1)} s`;
}
