import net from "node:net";

import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";

import {
  startLabTestPeer,
  startUpsdTestPeer,
  type NutTestPeer,
  type NutTestPower,
} from "@/lab/ups/nut-peers";
import { nutExchange } from "@/lab/ups/nut-exchange";
import { startUpsdPeer, UPSD_PEER_USER } from "@/lab/ups/upsd-peer";
import { waitUntil } from "@/lab/processes";

import type { TNutSource, UpsReading } from "../reading";
import { NutConnectionPool } from "./pool";
import { NutUpsSource } from "./source";

/**
 * The NUT source against real NUT servers: Debian's upsd with dummy-ups, and the lab UPS's NUT
 * face, running the same scenarios — so the client is proven against the real thing and the lab
 * cannot drift into a dialect of its own.
 */

const ON_LINE: NutTestPower = { mains: true, chargePercent: 100, runtimeSeconds: 1800 };
const ON_BATTERY: NutTestPower = { mains: false, chargePercent: 57, runtimeSeconds: 1026 };
const LOW_BATTERY: NutTestPower = { mains: false, chargePercent: 8, runtimeSeconds: 144 };

/**
 * How long a change may take to show. upsd needs up to ~2 s to serve a rewritten .dev file and
 * up to MAXAGE + 2 s (5 s) to call a frozen driver stale, more on a loaded machine; the lab
 * answers at once. Waits end as soon as the change shows, so this only bounds a failure.
 */
const CHANGE_TIMEOUT_MS = 15_000;

describe.each([
  ["upsd", startUpsdTestPeer],
  ["lab", startLabTestPeer],
] as const)("NUT source against %s", (_name, startPeer) => {
  let peer: NutTestPeer;
  let pool: NutConnectionPool;
  let source: NutUpsSource;

  beforeAll(async () => {
    peer = await startPeer(ON_LINE);
    // A short backoff keeps the reconnect scenarios quick.
    pool = new NutConnectionPool({ reconnectBackoff: { initialMs: 100, maxMs: 400 } });
    source = sourceFor(peer, pool);
  });

  afterAll(async () => {
    await source?.close();
    await peer?.stop();
  });

  // Every scenario starts from a UPS on line behind a running driver and server, whatever the
  // one before left (a killed driver, a stopped server, FSD) — even when it failed half-way.
  beforeEach(async () => {
    await peer.reset(ON_LINE);
    await readUntil(
      "the UPS on line after the reset",
      (r) =>
        r.kind === "reading" &&
        r.rawStatus === "OL" &&
        r.chargePercent === ON_LINE.chargePercent &&
        r.runtimeSeconds === ON_LINE.runtimeSeconds,
    );
  });

  /** Every reading from the first until one matches (the last); the last one seen on timeout. */
  async function readingsUntil(
    what: string,
    matches: (reading: UpsReading) => boolean,
    from: NutUpsSource = source,
  ): Promise<UpsReading[]> {
    const seen: UpsReading[] = [];
    try {
      await waitUntil(
        async () => {
          const reading = await from.read();
          seen.push(reading);
          return matches(reading);
        },
        { timeoutMs: CHANGE_TIMEOUT_MS, what },
      );
    } catch (error) {
      throw new Error(
        `${error instanceof Error ? error.message : String(error)} (last: ${JSON.stringify(seen.at(-1))})`,
      );
    }
    return seen;
  }

  async function readUntil(
    what: string,
    matches: (reading: UpsReading) => boolean,
    from: NutUpsSource = source,
  ): Promise<UpsReading> {
    return (await readingsUntil(what, matches, from)).at(-1)!;
  }

  it("reads a UPS on line with its charge and runtime", async () => {
    const reading = await readUntil("on line", (r) => r.kind === "reading");
    expect(reading).toMatchObject({
      kind: "reading",
      onBattery: false,
      lowBattery: false,
      chargePercent: 100,
      runtimeSeconds: 1800,
      reportedSecondsOnBattery: null,
      rawStatus: "OL",
    });
  });

  it("follows the UPS from on line to on battery to low battery", async () => {
    await peer.power(ON_BATTERY);
    expect(await readUntil("on battery", (r) => r.kind === "reading" && r.onBattery)).toMatchObject(
      {
        onBattery: true,
        lowBattery: false,
        chargePercent: 57,
        runtimeSeconds: 1026,
        rawStatus: "OB DISCHRG",
      },
    );
    await peer.power(LOW_BATTERY);
    expect(
      await readUntil("low battery", (r) => r.kind === "reading" && r.lowBattery),
    ).toMatchObject({
      onBattery: true,
      lowBattery: true,
      chargePercent: 8,
      runtimeSeconds: 144,
      rawStatus: "OB DISCHRG LB",
    });
    await peer.power(ON_LINE);
    await readUntil("on line again", (r) => r.kind === "reading" && !r.onBattery);
  });

  it("reads a stale driver as no reliable reading, never as on line, and recovers", async () => {
    await peer.freezeDriver();
    const stale = await readUntil("DATA-STALE", (r) => r.kind === "unreliable");
    expect(stale).toMatchObject({ kind: "unreliable" });
    expect(stale.kind === "unreliable" && stale.reason).toMatch(
      /^upsd at 127\.0\.0\.1:\d+ answered ERR DATA-STALE for UPS labups: /,
    );
    await peer.startDriver();
    await readUntil("fresh data again", (r) => r.kind === "reading");
  });

  it("reads a driver that is not running as no reliable reading, and recovers", async () => {
    await peer.killDriver();
    const readings = await readingsUntil(
      "DRIVER-NOT-CONNECTED",
      (r) => r.kind === "unreliable" && r.reason.includes("ERR DRIVER-NOT-CONNECTED"),
    );
    expect(readings.at(-1)).toMatchObject({
      kind: "unreliable",
      reason: expect.stringMatching(
        /^upsd at 127\.0\.0\.1:\d+ answered ERR DRIVER-NOT-CONNECTED for UPS labups: /,
      ),
    });
    // On the way there upsd may still serve what it had before it saw the driver go (on line),
    // or, having reconnected to the exiting driver's socket, "WAIT" until that closes too
    // (NUT's server/sstate.c sets WAIT on every driver connect until the driver's dump is done):
    // never a reading of anything else, and WAIT is no reading at all.
    for (const reading of readings.slice(0, -1)) {
      expect(
        reading.kind === "reading"
          ? reading.rawStatus
          : reading.reason.replace(/^upsd at 127\.0\.0\.1:\d+/, "upsd"),
      ).toMatch(/^OL$|^upsd for UPS labups: ups\.status "WAIT" says neither OL nor OB$/);
    }
    await peer.startDriver();
    // upsd reconnects to a restarted driver by itself (WAIT until the driver has dumped its data).
    await readUntil("driver back", (r) => r.kind === "reading");
  });

  it("reads a stopped server as refused, then reconnects by itself when it is back", async () => {
    await peer.stopServer();
    const refused = await source.read();
    expect(refused.kind).toBe("unreliable");
    expect(refused.kind === "unreliable" && refused.reason).toMatch(
      /^upsd at 127\.0\.0\.1:\d+ refused the connection/,
    );
    await peer.startServer();
    await readUntil("server back", (r) => r.kind === "reading" && !r.onBattery);
  });

  it("reads forced shutdown (FSD from the primary upsmon) on mains as on line, with the FSD flag", async () => {
    await peer.declareForcedShutdown();
    // upsd puts FSD before the driver's own status: on mains that is FSD OL, which by itself
    // is no outage (lib/power/triggers/decide.ts weighs the flag).
    expect(
      await readUntil("FSD", (r) => r.kind === "reading" && r.rawStatus.includes("FSD")),
    ).toMatchObject({
      onBattery: false,
      lowBattery: false,
      forcedShutdown: true,
      rawStatus: "FSD OL",
    });
    // upsd keeps FSD until it restarts.
    await peer.stopServer();
    await peer.startServer();
    await readUntil(
      "FSD gone",
      (r) => r.kind === "reading" && !r.onBattery && r.forcedShutdown === false,
    );
  });

  it("reports a wrong password as ACCESS-DENIED, never as a reading", async () => {
    const wrong = sourceFor(peer, pool, { password: "not the password" });
    try {
      const reading = await wrong.read();
      expect(reading.kind).toBe("unreliable");
      expect(reading.kind === "unreliable" && reading.reason).toMatch(
        /refused the login of user "monuser" \(ERR ACCESS-DENIED\): check the password/,
      );
      expect(JSON.stringify(reading)).not.toContain("not the password");
    } finally {
      await wrong.close();
    }
  });

  it("reports a UPS name the server does not have as UNKNOWN-UPS", async () => {
    const unknown = sourceFor(peer, pool, { upsName: "nosuchups" });
    try {
      const reading = await unknown.read();
      expect(reading.kind === "unreliable" && reading.reason).toMatch(
        /answered ERR UNKNOWN-UPS for UPS nosuchups: it serves no UPS of that name/,
      );
    } finally {
      await unknown.close();
    }
  });

  it("logs out once the UPS is no longer needed, reads on without logging in, and logs in again when needed", async () => {
    const logins = async () => {
      const [answer] = await nutExchange(peer.port, [`GET NUMLOGINS ${peer.upsName}`]);
      return answer?.[0];
    };
    // Logged in: the UPS's primary upsmon counts the console among the systems it waits for.
    await readUntil("a reading", (r) => r.kind === "reading");
    expect(await logins()).toBe(`NUMLOGINS ${peer.upsName} 1`);
    await source.setNeeded(false);
    // Counted out as soon as the logout returns: the primary may go on from here.
    expect(await logins()).toBe(`NUMLOGINS ${peer.upsName} 0`);
    await peer.power(ON_BATTERY);
    await readUntil("on battery", (r) => r.kind === "reading" && r.onBattery);
    expect(await logins()).toBe(`NUMLOGINS ${peer.upsName} 0`);
    // Needed again (a new outage): the next read logs in again.
    await source.setNeeded(true);
    expect(await source.read()).toMatchObject({ kind: "reading", onBattery: true });
    expect(await logins()).toBe(`NUMLOGINS ${peer.upsName} 1`);
  });

  it("reads anonymously when no user is configured", async () => {
    const anonymous = sourceFor(peer, pool, { username: undefined, password: undefined });
    try {
      expect(await anonymous.read()).toMatchObject({ kind: "reading", onBattery: false });
    } finally {
      await anonymous.close();
    }
  });
});

describe("NUT connections", () => {
  it("serves two UPS on one upsd over one shared connection, in order", async () => {
    const peer = await startUpsdPeer({
      ups: [
        { name: "ups1", vars: { "ups.status": "OL", "battery.charge": "100" } },
        { name: "ups2", vars: { "ups.status": "OB DISCHRG", "battery.charge": "40" } },
      ],
    });
    const pool = new NutConnectionPool();
    const config = {
      type: "nut" as const,
      host: peer.host,
      port: peer.port,
      ...UPSD_PEER_USER,
    };
    const first = new NutUpsSource({ ...config, upsName: "ups1" }, { pool });
    const second = new NutUpsSource({ ...config, upsName: "ups2" }, { pool });
    try {
      // Concurrent reads on the one connection: each gets its own UPS's answer.
      const readings = await Promise.all([
        first.read(),
        second.read(),
        first.read(),
        second.read(),
      ]);
      expect(readings.map((r) => r.kind === "reading" && r.chargePercent)).toEqual([
        100, 40, 100, 40,
      ]);
      expect(pool.size).toBe(1);
    } finally {
      await first.close();
      await second.close();
      await peer.stop();
    }
    expect(pool.size).toBe(0);
  });

  it("gives up on a server that accepts and never answers within the deadline", async () => {
    // The one case without a real NUT server: a peer that says nothing at all.
    const sockets = new Set<net.Socket>();
    const silent = net.createServer((socket) => {
      sockets.add(socket);
      socket.resume(); // reads and ignores, so it sees the client hang up
    });
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const port = (silent.address() as net.AddressInfo).port;
    const pool = new NutConnectionPool();
    const source = new NutUpsSource(
      { type: "nut", host: "127.0.0.1", port, upsName: "labups" },
      { pool, deadlineMs: 500 },
    );
    try {
      const reading = await source.read();
      expect(reading).toMatchObject({ kind: "unreliable" });
      expect(reading.kind === "unreliable" && reading.reason).toBe(
        `upsd at 127.0.0.1:${port} did not answer within 0.5 s`,
      );
      // The connection it gave up on is closed, not left for the next answer to confuse.
      await waitUntil(() =>
        [...sockets].every((socket) => socket.destroyed || socket.readableEnded),
      );
    } finally {
      await source.close();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });
});

function sourceFor(
  peer: NutTestPeer,
  pool: NutConnectionPool,
  overrides: Partial<Pick<TNutSource, "upsName" | "username" | "password">> = {},
): NutUpsSource {
  return new NutUpsSource(
    {
      type: "nut",
      host: peer.host,
      port: peer.port,
      upsName: peer.upsName,
      username: peer.user.username,
      password: peer.user.password,
      ...overrides,
    },
    { pool },
  );
}
