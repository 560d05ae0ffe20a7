import net from "node:net";

import type { TNutSource } from "../reading";
import { NutLineReader } from "./line-reader";
import { nutErrorCode, quoteNutWord, splitNutWords } from "./protocol";

/**
 * The result of asking upsd to run an instant command. `accepted`: upsd answered `OK` (or, with
 * tracking on, `OK TRACKING <id>`) — it handed the command to the UPS's driver, nothing more.
 * `refused`: upsd (or the UPS's command list) said no, with its ERR code. `unanswered`: no usable
 * answer (refused connection, silence, a protocol violation): whether it arrived is unknown
 * only if the INSTCMD line itself went out (`maybeSent`).
 */
export type NutInstantCommandResult =
  | {
      kind: "accepted";
      answer: string;
      /** `ups.delay.shutdown` / `ups.delay.start` as the driver publishes them, when it does. */
      delays: { shutdownSeconds: number | null; startSeconds: number | null };
      exchange: string[];
    }
  | { kind: "refused"; code: string; message: string; exchange: string[] }
  | { kind: "unanswered"; message: string; maybeSent: boolean; exchange: string[] };

const MAX_LINE_LENGTH = 64 * 1024;
const MAX_LIST_LINES = 10_000;

/**
 * Sends `INSTCMD <ups> <command>` the way upsd expects it (docs/net-protocol.txt; server/
 * netinstcmd.c), on a connection of its own — not the monitor's shared one, which is logged in
 * with LOGIN and must stay untouched: USERNAME, PASSWORD, `LIST CMD <ups>` first (a UPS that
 * does not offer the command is reported as such before anything is asked of it), the
 * INSTCMD, then LOGOUT. upsd checks a user's `instcmds` only at the INSTCMD itself; the user
 * needs `instcmds = <command>` in upsd.users, which a `upsmon` line does not give.
 *
 * Every step has the one deadline; the exchange (password masked) is returned for the record.
 */
export async function sendNutInstantCommand(
  source: TNutSource,
  command: string,
  deadlineMs: number,
): Promise<NutInstantCommandResult> {
  const where = `upsd at ${source.host.includes(":") ? `[${source.host}]` : source.host}:${source.port}`;
  const ups = source.upsName;
  const exchange: string[] = [];
  const username = source.username ?? "";
  const password = source.password ?? "";
  if (username === "" || password === "") {
    return {
      kind: "refused",
      code: "USERNAME-REQUIRED",
      message: `${where}: the NUT source of UPS ${ups} has no user name and password; upsd takes INSTCMD only from a user of upsd.users with "instcmds = ${command}"`,
      exchange,
    };
  }
  const deadlineAt = performance.now() + deadlineMs;
  const socket = net.connect({ host: source.host, port: source.port });
  let sentCommand = false;
  const unanswered = (detail: string): NutInstantCommandResult => ({
    kind: "unanswered",
    message: `${where} ${detail}${sentCommand ? `: whether the UPS took ${command} is unknown` : `; ${command} was not sent`}`,
    maybeSent: sentCommand,
    exchange,
  });
  try {
    const connected = await new Promise<string | null>((resolve) => {
      const timer = setTimeout(
        () => resolve(`did not accept the connection within ${deadlineMs} ms`),
        Math.max(0, deadlineAt - performance.now()),
      );
      socket.once("connect", () => {
        clearTimeout(timer);
        resolve(null);
      });
      socket.once("error", (error: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        resolve(`could not be reached (${error.code ?? error.message})`);
      });
    });
    if (connected !== null) return unanswered(connected);
    socket.on("error", () => {});
    socket.setNoDelay(true);
    const reader = new NutLineReader(socket, { maxLineLength: MAX_LINE_LENGTH }, () => {});
    const timeout = () => new Error("timeout");
    const ask = async (line: string, shown = line): Promise<string> => {
      exchange.push(`> ${shown}`);
      socket.write(`${line}\n`);
      const answer = await reader.next(deadlineAt, timeout);
      exchange.push(`< ${answer}`);
      return answer;
    };
    const refusedBy = (answer: string, what: string): NutInstantCommandResult | null => {
      const code = nutErrorCode(wordsOf(answer));
      if (code === null) return null;
      return {
        kind: "refused",
        code,
        message: `${where} refused ${what} for UPS ${ups} (ERR ${code}): ${whatToDo(code, command, username)}`,
        exchange,
      };
    };

    try {
      for (const [line, shown] of [
        [`USERNAME ${quoteNutWord(username)}`, `USERNAME ${quoteNutWord(username)}`],
        [`PASSWORD ${quoteNutWord(password)}`, "PASSWORD ********"],
      ] as const) {
        const answer = await ask(line, shown);
        if (answer === "OK") continue;
        const refused = refusedBy(answer, shown.split(" ")[0]!);
        if (refused !== null) return refused;
        return unanswered(`gave an answer the protocol does not allow: ${answer.slice(0, 200)}`);
      }

      const list = `LIST CMD ${ups}`;
      const first = await ask(list);
      const listRefused = refusedBy(first, "LIST CMD");
      if (listRefused !== null) return listRefused;
      if (first !== `BEGIN ${list}`) {
        return unanswered(`gave an answer the protocol does not allow: ${first.slice(0, 200)}`);
      }
      const offered: string[] = [];
      for (;;) {
        const line = await reader.next(deadlineAt, timeout);
        if (line === `END ${list}`) break;
        const words = wordsOf(line);
        if (words.length !== 3 || words[0] !== "CMD" || words[1] !== ups) {
          return unanswered(`sent a line LIST CMD does not allow: ${line.slice(0, 200)}`);
        }
        if (offered.push(words[2]!) > MAX_LIST_LINES) return unanswered("listed too many commands");
      }
      exchange.push(`< (${offered.length} command(s): ${offered.join(" ")})`);
      if (!offered.some((name) => name.toLowerCase() === command.toLowerCase())) {
        return {
          kind: "refused",
          code: "CMD-NOT-SUPPORTED",
          message: `${where}: UPS ${ups} does not offer ${command} (LIST CMD lists ${offered.length === 0 ? "no command" : offered.join(", ")}); its driver cannot cycle the output, so nothing was sent`,
          exchange,
        };
      }

      const delays = {
        shutdownSeconds: await readSeconds(ask, ups, "ups.delay.shutdown"),
        startSeconds: await readSeconds(ask, ups, "ups.delay.start"),
      };

      sentCommand = true;
      const answer = await ask(`INSTCMD ${ups} ${command}`);
      const refused = refusedBy(answer, `INSTCMD ${command}`);
      if (refused !== null) return refused;
      if (answer !== "OK" && !/^OK TRACKING \S+$/.test(answer)) {
        return unanswered(`gave an answer the protocol does not allow: ${answer.slice(0, 200)}`);
      }
      // Best effort: the command is with the driver whatever LOGOUT answers.
      socket.write("LOGOUT\n");
      exchange.push("> LOGOUT");
      return { kind: "accepted", answer, delays, exchange };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      return unanswered(
        message === "timeout"
          ? `did not answer within ${deadlineMs} ms`
          : `closed the connection (${message})`,
      );
    }
  } finally {
    socket.destroy();
  }
}

async function readSeconds(
  ask: (line: string) => Promise<string>,
  ups: string,
  name: string,
): Promise<number | null> {
  const words = wordsOf(await ask(`GET VAR ${ups} ${name}`));
  if (words[0] !== "VAR" || words[2] !== name) return null; // ERR VAR-NOT-SUPPORTED and the like
  const value = Number(words[3]);
  return Number.isFinite(value) && value >= 0 ? value : null;
}

function wordsOf(line: string): string[] {
  try {
    return splitNutWords(line);
  } catch {
    return [];
  }
}

function whatToDo(code: string, command: string, username: string): string {
  switch (code) {
    case "ACCESS-DENIED":
      return `check the password, and give user "${username}" "instcmds = ${command}" in upsd.users (then reload upsd)`;
    case "CMD-NOT-SUPPORTED":
      return `the UPS's driver does not offer ${command}`;
    case "UNKNOWN-UPS":
      return "upsd serves no UPS of that name; check the UPS name";
    case "DATA-STALE":
    case "DRIVER-NOT-CONNECTED":
      return "the UPS's driver is not in contact with the UPS, so the command cannot reach it";
    case "INSTCMD-FAILED":
      return "upsd could not hand the command to the driver; check the driver's log";
    default:
      return "see upsd's log";
  }
}
