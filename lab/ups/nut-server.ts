import net from "node:net";

import { NutGrammarError, quoteNutWord, splitNutWords } from "@/lib/power/ups/nut/protocol";
import { listenKeepingPort } from "../listen-port";

/**
 * The lab's NUT server face: NUT's network protocol (upsd, protocol 1.3) on 127.0.0.1 for the
 * lab's UPS devices, answering as Debian's upsd 2.8.0 does (checked by the parity tests, which
 * run the same client scenarios against both):
 *
 * - VER, NETVER, HELP, USERNAME, PASSWORD, LOGIN, LOGOUT, FSD, LIST UPS, LIST VAR, LIST CMD,
 *   GET VAR, GET NUMLOGINS, GET UPSDESC, INSTCMD; STARTTLS answers FEATURE-NOT-CONFIGURED (no
 *   certificate).
 * - INSTCMD checks in upsd's order (server/upsd.c check_command, server/netinstcmd.c
 *   send_instcmd): user and password given (USERNAME-REQUIRED, PASSWORD-REQUIRED), two
 *   arguments at least (INVALID-ARGUMENT), the UPS (UNKNOWN-UPS), its driver (DATA-STALE,
 *   DRIVER-NOT-CONNECTED), the command among the driver's (CMD-NOT-SUPPORTED, names compared
 *   without case), then the user's `instcmds` (ACCESS-DENIED; a wrong password too). No LOGIN
 *   is needed. upsd answers `OK` once the command is handed to the driver.
 * - USERNAME and PASSWORD always answer OK (once each); LOGIN checks them and needs a user with
 *   `upsmon`, else ACCESS-DENIED; one LOGIN per connection.
 * - A device whose driver is stale answers DATA-STALE to LIST VAR and GET VAR; one whose driver
 *   is not running, DRIVER-NOT-CONNECTED. LIST UPS and LOGIN do not care.
 * - A quoted word may span lines, as in upsd's parser; an empty line is UNKNOWN-COMMAND.
 */

export type LabNutDriverState = "connected" | "stale" | "not-connected";

export type LabNutDevice = {
  name: string;
  description: string;
  /** The variables now (name → value), as the driver would publish them. */
  vars(): ReadonlyMap<string, string>;
  driver(): LabNutDriverState;
  /** `FSD <ups>` from a primary: sets the forced-shutdown flag (upsd keeps it until restart). */
  forceShutdown(): void;
  /** The instant commands the driver offers (`LIST CMD`), in the order upsd lists them. */
  commands(): readonly string[];
  /** An accepted `INSTCMD <ups> <command>` (the name as the driver lists it). */
  instantCommand(command: string): void;
};

/** A user of upsd.users: `upsmon primary` may also send FSD; without upsmon, LOGIN is denied. */
export type LabNutUser = {
  username: string;
  password: string;
  upsmon: "primary" | "secondary" | null;
  /** upsd.users `instcmds = …`: the instant commands the user may send (`all` for every one). */
  instcmds?: readonly string[];
};

/** How the server answers new and open connections. */
export type LabNutReachability = "reachable" | "refused" | "silent";

export type LabNutServerOptions = {
  devices: () => readonly LabNutDevice[];
  users: readonly LabNutUser[];
  /** Default: a random free port on 127.0.0.1. */
  port?: number;
};

export type LabNutCommand = { at: Date; line: string };

const HELP = "Commands: HELP VER GET LIST SET INSTCMD LOGIN LOGOUT USERNAME PASSWORD STARTTLS";
const MAX_PENDING_CHARS = 64 * 1024;

export class LabNutServer {
  private server: net.Server | null = null;
  private readonly sockets = new Set<net.Socket>();
  private reachabilityState: LabNutReachability = "reachable";
  private readonly logins = new Map<string, number>();
  /** Every command line received, passwords masked. */
  readonly commands: LabNutCommand[] = [];
  /** Listened before: a return from "refused" comes back to the same port. */
  private listened = false;

  private constructor(
    private readonly options: LabNutServerOptions,
    private boundPort: number,
  ) {}

  static async start(options: LabNutServerOptions): Promise<LabNutServer> {
    const server = new LabNutServer(options, options.port ?? 0);
    await server.listen();
    return server;
  }

  get port(): number {
    return this.boundPort;
  }

  get reachability(): LabNutReachability {
    return this.reachabilityState;
  }

  /**
   * `refused`: the port closes (connections refused) and open connections are cut;
   * `silent`: connections are accepted and nothing is ever answered; `reachable`: normal.
   */
  async setReachability(next: LabNutReachability): Promise<void> {
    if (next === this.reachabilityState) return;
    this.reachabilityState = next;
    if (next === "refused") {
      for (const socket of this.sockets) socket.destroy();
      await this.closeListener();
    } else if (this.server === null) {
      await this.listen();
    }
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await this.closeListener();
  }

  private async listen(): Promise<void> {
    const server = net.createServer((socket) => this.accept(socket));
    this.boundPort = await listenKeepingPort(server, this.boundPort, "127.0.0.1", {
      returns: this.listened,
    });
    this.listened = true;
    this.server = server;
  }

  private async closeListener(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (server !== null) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private accept(socket: net.Socket): void {
    this.sockets.add(socket);
    const session: Session = { username: null, password: null, loginUps: null };
    let buffer = "";
    let pending = "";
    socket.setEncoding("utf8");
    socket.setNoDelay(true);
    socket.on("error", () => {});
    socket.on("close", () => {
      this.sockets.delete(socket);
      this.logout(session);
    });
    socket.on("data", (chunk: string) => {
      buffer += chunk;
      let newline: number;
      while ((newline = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, newline).replace(/\r$/, "");
        buffer = buffer.slice(newline + 1);
        let words: string[];
        try {
          words = splitNutWords(pending + line);
          pending = "";
        } catch (error) {
          // upsd's parser carries an open quote (or an escaped line break) over to the next line.
          if (!(error instanceof NutGrammarError)) throw error;
          pending += `${line}\n`;
          if (pending.length > MAX_PENDING_CHARS) socket.destroy();
          continue;
        }
        this.commands.push({ at: new Date(), line: maskPassword(words, line) });
        if (this.reachabilityState === "silent") continue;
        const answer = this.answer(session, words);
        if (answer === null) {
          // As upsd (server/netuser.c): counted out before the answer, so a client that has
          // its OK Goodbye is no longer among NUMLOGINS.
          this.logout(session);
          socket.end("OK Goodbye\n");
          return;
        }
        socket.write(answer.map((part) => `${part}\n`).join(""));
      }
      if (buffer.length > MAX_PENDING_CHARS) socket.destroy();
    });
  }

  /** The answer lines, or null for LOGOUT (answer and close). */
  private answer(session: Session, words: readonly string[]): string[] | null {
    const [command, ...args] = words;
    switch (command) {
      case "HELP":
        return [HELP];
      case "VER":
        return ["CluPilot lab UPS - NUT network protocol 1.3"];
      case "NETVER":
        return ["1.3"];
      case "STARTTLS":
        return ["ERR FEATURE-NOT-CONFIGURED"];
      case "USERNAME":
        if (args.length !== 1) return ["ERR INVALID-ARGUMENT"];
        if (session.username !== null) return ["ERR ALREADY-SET-USERNAME"];
        session.username = args[0]!;
        return ["OK"];
      case "PASSWORD":
        if (args.length !== 1) return ["ERR INVALID-ARGUMENT"];
        if (session.password !== null) return ["ERR ALREADY-SET-PASSWORD"];
        session.password = args[0]!;
        return ["OK"];
      case "LOGIN":
        return [this.login(session, args)];
      case "FSD":
        return [this.forcedShutdown(session, args)];
      case "INSTCMD":
        return [this.instantCommand(session, args)];
      case "LOGOUT":
        return null;
      case "LIST":
        return this.list(args);
      case "GET":
        return [this.get(args)];
      default:
        return ["ERR UNKNOWN-COMMAND"];
    }
  }

  private logout(session: Session): void {
    if (session.loginUps === null) return;
    this.logins.set(session.loginUps, (this.logins.get(session.loginUps) ?? 1) - 1);
    session.loginUps = null;
  }

  private login(session: Session, args: readonly string[]): string {
    // upsd checks that a user and password were given before it looks at the arguments.
    if (session.username === null) return "ERR USERNAME-REQUIRED";
    if (session.password === null) return "ERR PASSWORD-REQUIRED";
    if (args.length !== 1) return "ERR INVALID-ARGUMENT";
    if (session.loginUps !== null) return "ERR ALREADY-LOGGED-IN";
    const device = this.device(args[0]!);
    if (device === undefined) return "ERR UNKNOWN-UPS";
    if (this.authenticated(session)?.upsmon == null) return "ERR ACCESS-DENIED";
    session.loginUps = device.name;
    this.logins.set(device.name, (this.logins.get(device.name) ?? 0) + 1);
    return "OK";
  }

  private forcedShutdown(session: Session, args: readonly string[]): string {
    if (session.username === null) return "ERR USERNAME-REQUIRED";
    if (session.password === null) return "ERR PASSWORD-REQUIRED";
    if (args.length !== 1) return "ERR INVALID-ARGUMENT";
    const device = this.device(args[0]!);
    if (device === undefined) return "ERR UNKNOWN-UPS";
    if (this.authenticated(session)?.upsmon !== "primary") return "ERR ACCESS-DENIED";
    device.forceShutdown();
    return "OK FSD-SET";
  }

  private instantCommand(session: Session, args: readonly string[]): string {
    if (session.username === null) return "ERR USERNAME-REQUIRED";
    if (session.password === null) return "ERR PASSWORD-REQUIRED";
    if (args.length < 2) return "ERR INVALID-ARGUMENT";
    const device = this.device(args[0]!);
    if (device === undefined) return "ERR UNKNOWN-UPS";
    const refusal = driverRefusal(device);
    if (refusal !== null) return refusal;
    const wanted = args[1]!.toLowerCase();
    const command = device.commands().find((name) => name.toLowerCase() === wanted);
    if (command === undefined) return "ERR CMD-NOT-SUPPORTED";
    const allowed = this.authenticated(session)?.instcmds ?? [];
    if (!allowed.some((name) => name.toLowerCase() === wanted || name.toLowerCase() === "all")) {
      return "ERR ACCESS-DENIED";
    }
    device.instantCommand(command);
    return "OK";
  }

  private authenticated(session: Session): LabNutUser | undefined {
    return this.options.users.find(
      (user) => user.username === session.username && user.password === session.password,
    );
  }

  private list(args: readonly string[]): string[] {
    if (args[0] === "UPS" && args.length === 1) {
      return [
        "BEGIN LIST UPS",
        ...this.options
          .devices()
          .map((device) => `UPS ${device.name} ${quoteNutWord(device.description)}`),
        "END LIST UPS",
      ];
    }
    // upsd ignores words after the UPS name.
    if (args[0] === "VAR" && args.length >= 2) {
      const device = this.device(args[1]!);
      if (device === undefined) return ["ERR UNKNOWN-UPS"];
      const refusal = driverRefusal(device);
      if (refusal !== null) return [refusal];
      const vars = [...device.vars()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      return [
        `BEGIN LIST VAR ${device.name}`,
        ...vars.map(([name, value]) => `VAR ${device.name} ${name} ${quoteNutWord(value)}`),
        `END LIST VAR ${device.name}`,
      ];
    }
    if (args[0] === "CMD" && args.length >= 2) {
      const device = this.device(args[1]!);
      if (device === undefined) return ["ERR UNKNOWN-UPS"];
      const refusal = driverRefusal(device);
      if (refusal !== null) return [refusal];
      return [
        `BEGIN LIST CMD ${device.name}`,
        ...device.commands().map((command) => `CMD ${device.name} ${command}`),
        `END LIST CMD ${device.name}`,
      ];
    }
    return ["ERR INVALID-ARGUMENT"];
  }

  private get(args: readonly string[]): string {
    const [what, upsName, varName] = args;
    if (upsName === undefined) return "ERR INVALID-ARGUMENT";
    const device = this.device(upsName);
    switch (what) {
      case "NUMLOGINS":
        if (device === undefined) return "ERR UNKNOWN-UPS";
        return `NUMLOGINS ${device.name} ${this.logins.get(device.name) ?? 0}`;
      case "UPSDESC":
        if (device === undefined) return "ERR UNKNOWN-UPS";
        return `UPSDESC ${device.name} ${quoteNutWord(device.description)}`;
      case "VAR": {
        if (varName === undefined) return "ERR INVALID-ARGUMENT";
        if (device === undefined) return "ERR UNKNOWN-UPS";
        const refusal = driverRefusal(device);
        if (refusal !== null) return refusal;
        const value = device.vars().get(varName);
        if (value === undefined) return "ERR VAR-NOT-SUPPORTED";
        return `VAR ${device.name} ${varName} ${quoteNutWord(value)}`;
      }
      default:
        return "ERR INVALID-ARGUMENT";
    }
  }

  private device(name: string): LabNutDevice | undefined {
    return this.options.devices().find((device) => device.name === name);
  }
}

type Session = { username: string | null; password: string | null; loginUps: string | null };

function driverRefusal(device: LabNutDevice): string | null {
  switch (device.driver()) {
    case "connected":
      return null;
    case "stale":
      return "ERR DATA-STALE";
    case "not-connected":
      return "ERR DRIVER-NOT-CONNECTED";
  }
}

function maskPassword(words: readonly string[], line: string): string {
  return words[0] === "PASSWORD" ? "PASSWORD ********" : line;
}
