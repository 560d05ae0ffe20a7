import { execFile } from "node:child_process";

import {
  hostPort,
  type PowerController,
  type PowerOnResult,
  type PowerProblem,
  type PowerReading,
} from "./controller";

export type IpmiOptions = {
  address: string;
  port: number;
  username: string;
  password: string;
  /** Seconds ipmitool waits for each answer (-N); it tries twice (-R 2). Default 2. */
  answerSeconds?: number;
};

type Outcome = { code: number; stdout: string; stderr: string };

/**
 * IPMI over LAN (RMCP+) through Debian's `ipmitool -I lanplus`, never a home-made IPMI stack.
 * Started with execFile and an argument array (no shell); the password reaches it only as
 * `IPMI_PASSWORD` in its environment (`-E`), so it never shows in `ps`. `-v` makes ipmitool say
 * why a session failed (RAKP 2's verdict on the user and password, or no answer at all).
 */
export function ipmiController(options: IpmiOptions): PowerController {
  const where = `IPMI at ${hostPort(options.address, options.port)}`;
  const seconds = options.answerSeconds ?? 2;

  const ipmitool = (command: string[]): Promise<Outcome> =>
    new Promise((resolve) => {
      execFile(
        "ipmitool",
        [
          "-I",
          "lanplus",
          "-H",
          options.address,
          "-p",
          String(options.port),
          "-U",
          options.username,
          "-E",
          "-N",
          String(seconds),
          "-R",
          "2",
          "-v",
          ...command,
        ],
        {
          env: {
            PATH: process.env.PATH ?? "/usr/bin:/bin",
            IPMI_PASSWORD: options.password,
          } as unknown as NodeJS.ProcessEnv,
          encoding: "utf8",
          // A hard stop well past ipmitool's own retries: a hung ipmitool is no answer.
          timeout: (seconds * 3 + 10) * 1000,
          killSignal: "SIGKILL",
          maxBuffer: 1024 * 1024,
        },
        (error, stdout, stderr) => {
          const code =
            error === null
              ? 0
              : typeof error.code === "number"
                ? error.code
                : error.killed
                  ? -1
                  : -2;
          resolve({
            code,
            stdout: String(stdout),
            stderr: error && code === -2 ? `${String(stderr)}\n${error.message}` : String(stderr),
          });
        },
      );
    });

  const failure = (outcome: Outcome): { problem: PowerProblem; reason: string } => {
    const text = `${outcome.stderr}\n${outcome.stdout}`;
    if (outcome.code === -2 && /ENOENT/.test(text))
      return {
        problem: "answer",
        reason: `ipmitool is not installed on the console's machine (apt-get install ipmitool).`,
      };
    if (
      /RAKP 2 HMAC is invalid|invalid authentication algorithm|RAKP 4 message has invalid integrity/i.test(
        text,
      )
    )
      return {
        problem: "credentials",
        reason: `${where} refused the password of ${options.username}: check the password (IPMI 2.0 allows at most 20 characters).`,
      };
    if (/unauthorized name|Unauthorized name/i.test(text))
      return {
        problem: "credentials",
        reason: `${where} does not know the user ${options.username}: check the user name and that it is enabled for IPMI over LAN.`,
      };
    if (/insufficient privilege|privilege level/i.test(text))
      return {
        problem: "credentials",
        reason: `${where} gave ${options.username} too low a privilege: the user needs the Operator or Administrator privilege.`,
      };
    if (
      outcome.code === -1 ||
      /Get Auth Capabilities error|Error issuing Get Channel Authentication|No response|Address lookup|Unable to establish/i.test(
        text,
      )
    )
      return {
        problem: "unreachable",
        reason: `${where} could not be asked: no IPMI answer (is IPMI over LAN enabled on the BMC, and UDP ${options.port} reachable from the console?).`,
      };
    const line =
      lastLine(outcome.stderr) ?? lastLine(outcome.stdout) ?? `exit status ${outcome.code}`;
    return { problem: "answer", reason: `${where} answered with an error: ${line}.` };
  };

  return {
    kind: "ipmi",
    where,
    async readPowerState(): Promise<PowerReading> {
      const outcome = await ipmitool(["chassis", "power", "status"]);
      const match = /Chassis Power is (on|off)/i.exec(outcome.stdout);
      if (outcome.code === 0 && match) {
        const on = match[1]!.toLowerCase() === "on";
        return on
          ? { state: "on", detail: `${where} reports Chassis Power is on` }
          : { state: "off", detail: `${where} reports Chassis Power is off` };
      }
      return { state: "unknown", ...failure(outcome) };
    },
    async powerOn(): Promise<PowerOnResult> {
      const outcome = await ipmitool(["chassis", "power", "on"]);
      if (outcome.code === 0 && /Chassis Power Control: Up\/On/i.test(outcome.stdout))
        return { sent: true, detail: `${where} accepted chassis power on` };
      return { sent: false, ...failure(outcome) };
    },
  };
}

function lastLine(text: string): string | null {
  const lines = text
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line && !/^Loading IANA|^Unable to Get Channel Cipher Suites/.test(line));
  return lines.at(-1)?.slice(0, 200) ?? null;
}
