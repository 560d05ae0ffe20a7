import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  startUpsdPeer,
  UPSD_PEER_PRIMARY,
  UPSD_PEER_USER,
  type UpsdPeer,
} from "@/lab/ups/upsd-peer";
import { freePort } from "@/lib/db/embedded-postgres";
import type { TNutSource } from "../reading";
import { sendNutInstantCommand } from "./instant-command";

/*
 * The console's INSTCMD client against Debian's real upsd 2.8.0 with dummy-ups, which offers one
 * instant command, load.off (drivers/dummy-ups.c). So upsd's acceptance is shown with load.off;
 * shutdown.return, what the console sends, is refused by LIST CMD already — as it must be for a
 * UPS whose driver cannot cycle its output.
 */

let peer: UpsdPeer;

beforeAll(async () => {
  peer = await startUpsdPeer({ ups: [{ name: "rack1", vars: { "ups.status": "OB" } }] });
}, 60_000);

afterAll(async () => {
  await peer?.stop();
});

const source = (over: Partial<TNutSource> = {}): TNutSource => ({
  type: "nut",
  host: peer.host,
  port: peer.port,
  upsName: "rack1",
  username: UPSD_PEER_USER.username,
  password: UPSD_PEER_USER.password,
  ...over,
});

describe("sending an instant command to upsd", () => {
  it("is accepted with upsd's OK when the driver offers it and upsd.users allows it (instcmds = load.off)", async () => {
    const result = await sendNutInstantCommand(source(), "load.off", 5000);
    expect(result.kind, JSON.stringify(result)).toBe("accepted");
    expect(result.kind === "accepted" && result.answer).toBe("OK");
    // dummy-ups publishes neither delay: recorded as unknown, not made up.
    expect(result.kind === "accepted" && result.delays).toEqual({
      shutdownSeconds: null,
      startSeconds: null,
    });
    expect(result.exchange).toContain("> PASSWORD ********");
    expect(result.exchange.join("\n")).not.toContain(UPSD_PEER_USER.password);
  });

  it("is reported as not offered from LIST CMD, and INSTCMD is never sent, when the driver lacks it", async () => {
    const result = await sendNutInstantCommand(source(), "shutdown.return", 5000);
    expect(result).toMatchObject({ kind: "refused", code: "CMD-NOT-SUPPORTED" });
    expect(result.kind === "refused" && result.message).toContain(
      "UPS rack1 does not offer shutdown.return (LIST CMD lists load.off)",
    );
    expect(result.exchange.some((line) => line.startsWith("> INSTCMD"))).toBe(false);
  });

  it("names upsd.users' instcmds when upsd answers ACCESS-DENIED (a user without the right)", async () => {
    const result = await sendNutInstantCommand(source(UPSD_PEER_PRIMARY), "load.off", 5000);
    expect(result).toMatchObject({ kind: "refused", code: "ACCESS-DENIED" });
    expect(result.kind === "refused" && result.message).toContain(
      `give user "${UPSD_PEER_PRIMARY.username}" "instcmds = load.off" in upsd.users`,
    );
  });

  it("says UNKNOWN-UPS for a UPS upsd does not serve, and not sent when nothing listens", async () => {
    const unknown = await sendNutInstantCommand(source({ upsName: "rack9" }), "load.off", 5000);
    expect(unknown).toMatchObject({ kind: "refused", code: "UNKNOWN-UPS" });
    const port = await freePort();
    const silent = await sendNutInstantCommand(source({ port }), "load.off", 5000);
    expect(silent).toMatchObject({ kind: "unanswered", maybeSent: false });
    expect(silent.kind === "unanswered" && silent.message).toContain("load.off was not sent");
  });
});
