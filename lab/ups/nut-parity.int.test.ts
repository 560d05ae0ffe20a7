import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { quoteNutWord } from "@/lib/power/ups/nut/protocol";

import { waitUntil } from "../processes";
import { nutExchange } from "./nut-exchange";
import { startLabTestPeer, startUpsdTestPeer, type NutTestPeer } from "./nut-peers";

/**
 * The lab's NUT face answers what Debian's upsd 2.8.0 answers, line for line: the same
 * exchanges go to both, each on a fresh connection, and the answers must be equal. (VER names
 * the server and is left out; LIST VAR lists each driver's own variables, so only its frame
 * and the variables both publish are compared.)
 */

const POWER = { mains: false, chargePercent: 57, runtimeSeconds: 1026 };

let upsd: NutTestPeer;
let lab: NutTestPeer;

beforeAll(async () => {
  [upsd, lab] = await Promise.all([startUpsdTestPeer(POWER), startLabTestPeer(POWER)]);
});

afterAll(async () => {
  await Promise.all([upsd?.stop(), lab?.stop()]);
});

async function both(lines: (peer: NutTestPeer) => string[]): Promise<[string[][], string[][]]> {
  return Promise.all([nutExchange(upsd.port, lines(upsd)), nutExchange(lab.port, lines(lab))]);
}

async function expectSameAnswers(lines: (peer: NutTestPeer) => string[]): Promise<string[][]> {
  const [fromUpsd, fromLab] = await both(lines);
  expect(fromLab).toEqual(fromUpsd);
  return fromUpsd;
}

describe("the lab's NUT face and upsd", () => {
  it("answer unknown, incomplete and unsupported commands alike", async () => {
    const answers = await expectSameAnswers(() => [
      "NETVER",
      "HELP",
      "STARTTLS",
      "",
      "FOO",
      "LIST",
      "GET",
      "LIST FOO",
      "GET FOO labups",
      "LIST VAR",
      "GET VAR labups",
    ]);
    expect(answers.map((answer) => answer[0])).toEqual([
      "1.3",
      "Commands: HELP VER GET LIST SET INSTCMD LOGIN LOGOUT USERNAME PASSWORD STARTTLS",
      "ERR FEATURE-NOT-CONFIGURED",
      "ERR UNKNOWN-COMMAND",
      "ERR UNKNOWN-COMMAND",
      "ERR INVALID-ARGUMENT",
      "ERR INVALID-ARGUMENT",
      "ERR INVALID-ARGUMENT",
      "ERR INVALID-ARGUMENT",
      "ERR INVALID-ARGUMENT",
      "ERR INVALID-ARGUMENT",
    ]);
  });

  it("list their UPS and answer GET VAR for known and unknown names alike", async () => {
    await waitUntil(
      async () => {
        const [[fromUpsd]] = await both(() => ["GET VAR labups ups.status"]);
        return fromUpsd?.[0] === 'VAR labups ups.status "OB DISCHRG"';
      },
      { timeoutMs: 6000, what: "upsd to serve the power state" },
    );
    const answers = await expectSameAnswers(() => [
      "LIST UPS",
      "GET UPSDESC labups",
      "GET VAR labups ups.status",
      "GET VAR labups battery.charge",
      "GET VAR labups battery.runtime extra words",
      "GET VAR labups no.such.var",
      "GET VAR nosuchups ups.status",
      "LIST VAR nosuchups",
    ]);
    expect(answers).toEqual([
      ["BEGIN LIST UPS", 'UPS labups "CluPilot lab UPS"', "END LIST UPS"],
      ['UPSDESC labups "CluPilot lab UPS"'],
      ['VAR labups ups.status "OB DISCHRG"'],
      ['VAR labups battery.charge "57"'],
      ['VAR labups battery.runtime "1026"'],
      ["ERR VAR-NOT-SUPPORTED"],
      ["ERR UNKNOWN-UPS"],
      ["ERR UNKNOWN-UPS"],
    ]);
  });

  it("frame LIST VAR alike and agree on the variables both publish", async () => {
    const [[fromUpsd], [fromLab]] = await both(() => ["LIST VAR labups extra"]);
    for (const answer of [fromUpsd!, fromLab!]) {
      expect(answer[0]).toBe("BEGIN LIST VAR labups");
      expect(answer.at(-1)).toBe("END LIST VAR labups");
      expect(answer.slice(1, -1).every((line) => line.startsWith("VAR labups "))).toBe(true);
      // Sorted by name, as upsd keeps its variable tree.
      const names = answer.slice(1, -1).map((line) => line.split(" ")[2]!);
      expect(names).toEqual([...names].sort());
    }
    const shared = ["battery.charge", "battery.runtime", "ups.status"];
    const pick = (answer: string[]) =>
      answer.filter((line) => shared.includes(line.split(" ")[2] ?? ""));
    expect(pick(fromLab!)).toEqual(pick(fromUpsd!));
  });

  it("check USERNAME and PASSWORD only at LOGIN, in the same order", async () => {
    const answers = await expectSameAnswers((peer) => [
      `LOGIN ${peer.upsName}`,
      `USERNAME ${peer.user.username}`,
      `USERNAME ${peer.user.username}`,
      `LOGIN ${peer.upsName}`,
      `PASSWORD ${quoteNutWord("not the password")}`,
      `PASSWORD ${quoteNutWord("another")}`,
      `LOGIN ${peer.upsName}`,
    ]);
    expect(answers.flat()).toEqual([
      "ERR USERNAME-REQUIRED",
      "OK",
      "ERR ALREADY-SET-USERNAME",
      "ERR PASSWORD-REQUIRED",
      "OK",
      "ERR ALREADY-SET-PASSWORD",
      "ERR ACCESS-DENIED",
    ]);
  });

  it("log a monitoring user in once per connection, refuse FSD to it and say goodbye alike", async () => {
    const answers = await expectSameAnswers((peer) => [
      `USERNAME ${peer.user.username}`,
      `PASSWORD ${quoteNutWord(peer.user.password)}`,
      "LOGIN nosuchups",
      `LOGIN ${peer.upsName}`,
      `LOGIN ${peer.upsName}`,
      `FSD ${peer.upsName}`,
      "LOGOUT",
      "NETVER",
    ]);
    expect(answers.flat()).toEqual([
      "OK",
      "OK",
      "ERR UNKNOWN-UPS",
      "OK",
      "ERR ALREADY-LOGGED-IN",
      "ERR ACCESS-DENIED",
      "OK Goodbye",
      "(closed)",
    ]);
  });

  it("list a UPS's instant commands and check INSTCMD in upsd's order: user, arguments, UPS, command, permission", async () => {
    const anonymous = await expectSameAnswers((peer) => [
      `LIST CMD ${peer.upsName}`,
      `LIST CMD ${peer.upsName} extra`,
      "LIST CMD nosuchups",
      "LIST CMD",
      `INSTCMD ${peer.upsName} shutdown.return`,
    ]);
    expect(anonymous).toEqual([
      ["BEGIN LIST CMD labups", "CMD labups load.off", "END LIST CMD labups"],
      ["BEGIN LIST CMD labups", "CMD labups load.off", "END LIST CMD labups"],
      ["ERR UNKNOWN-UPS"],
      ["ERR INVALID-ARGUMENT"],
      ["ERR USERNAME-REQUIRED"],
    ]);
    const allowed = await expectSameAnswers((peer) => [
      `USERNAME ${peer.user.username}`,
      `INSTCMD ${peer.upsName} load.off`,
      `PASSWORD ${quoteNutWord(peer.user.password)}`,
      `INSTCMD ${peer.upsName}`,
      "INSTCMD nosuchups shutdown.return",
      // dummy-ups offers no shutdown.return: upsd refuses it before it looks at the user.
      `INSTCMD ${peer.upsName} shutdown.return`,
      `INSTCMD ${peer.upsName} LOAD.OFF`,
    ]);
    expect(allowed.flat()).toEqual([
      "OK",
      "ERR PASSWORD-REQUIRED",
      "OK",
      "ERR INVALID-ARGUMENT",
      "ERR UNKNOWN-UPS",
      "ERR CMD-NOT-SUPPORTED",
      "OK",
    ]);
    const denied = await expectSameAnswers((peer) => [
      `USERNAME ${peer.user.username}`,
      `PASSWORD ${quoteNutWord("not the password")}`,
      `INSTCMD ${peer.upsName} load.off`,
    ]);
    expect(denied.flat()).toEqual(["OK", "OK", "ERR ACCESS-DENIED"]);
    // upsmon primary, without instcmds in upsd.users: not allowed.
    const [fromUpsd, fromLab] = await Promise.all(
      [upsd, lab].map((peer) =>
        nutExchange(peer.port, [
          `USERNAME ${peer.primaryUser.username}`,
          `PASSWORD ${quoteNutWord(peer.primaryUser.password)}`,
          `INSTCMD ${peer.upsName} load.off`,
        ]),
      ),
    );
    expect(fromLab).toEqual(fromUpsd);
    expect(fromUpsd!.flat()).toEqual(["OK", "OK", "ERR ACCESS-DENIED"]);
  });

  it("refuse the data of a stale driver and of a missing driver alike", async () => {
    await Promise.all([upsd.freezeDriver(), lab.freezeDriver()]);
    await waitUntil(
      async () => {
        const [answer] = await nutExchange(upsd.port, ["GET VAR labups ups.status"]);
        return answer?.[0] === "ERR DATA-STALE";
      },
      { timeoutMs: 10_000, what: "upsd to call the frozen driver stale" },
    );
    const stale = await expectSameAnswers((peer) => [
      "GET VAR labups ups.status",
      "LIST VAR labups",
      "LIST CMD labups",
      `USERNAME ${peer.user.username}`,
      `PASSWORD ${quoteNutWord(peer.user.password)}`,
      "INSTCMD labups load.off",
      "LIST UPS",
    ]);
    expect(stale.slice(0, 3)).toEqual([["ERR DATA-STALE"], ["ERR DATA-STALE"], ["ERR DATA-STALE"]]);
    expect(stale[5]).toEqual(["ERR DATA-STALE"]);

    await Promise.all([upsd.killDriver(), lab.killDriver()]);
    await waitUntil(
      async () => {
        const [answer] = await nutExchange(upsd.port, ["GET VAR labups ups.status"]);
        return answer?.[0] === "ERR DRIVER-NOT-CONNECTED";
      },
      { timeoutMs: 10_000, what: "upsd to notice the driver is gone" },
    );
    const gone = await expectSameAnswers(() => ["GET VAR labups ups.status", "LIST VAR labups"]);
    expect(gone).toEqual([["ERR DRIVER-NOT-CONNECTED"], ["ERR DRIVER-NOT-CONNECTED"]]);
  }, 30_000);
});
