import { afterAll, beforeAll, describe, expect, it } from "vitest";

import {
  startLabSnmpTestPeer,
  startSnmpdTestPeer,
  type SnmpTestPeer,
  type SnmpTestPower,
} from "@/lab/ups/snmp-peers";
import { startLabUps } from "@/lab/ups/lab-ups";

import type { TSnmpSource } from "../reading";
import { SnmpUpsSource } from "./source";

/**
 * The SNMP source against real agents: Debian's snmpd (net-snmp 5.9) serving the UPS-MIB, and
 * the lab UPS's agent, with the same scenarios in SNMP v1, v2c and v3 (authPriv).
 */

const ON_LINE: SnmpTestPower = { mains: true, chargePercent: 100, runtimeSeconds: 1800 };
const ON_BATTERY: SnmpTestPower = { mains: false, chargePercent: 57, runtimeSeconds: 1026 };
const LOW_BATTERY: SnmpTestPower = { mains: false, chargePercent: 8, runtimeSeconds: 144 };

const VERSIONS = ["1", "2c", "3"] as const;

function configFor(
  peer: SnmpTestPeer,
  version: (typeof VERSIONS)[number],
  overrides: Record<string, string> = {},
): TSnmpSource {
  const base = { type: "snmp" as const, host: peer.host, port: peer.port };
  if (version === "3") {
    return { ...base, version, ...peer.v3, ...overrides };
  }
  return { ...base, version, community: peer.community, ...overrides };
}

describe.each([
  ["snmpd", startSnmpdTestPeer],
  ["the lab agent", startLabSnmpTestPeer],
] as const)("SNMP source against %s", (_name, startPeer) => {
  let peer: SnmpTestPeer;
  let withoutCounter: SnmpTestPeer;

  beforeAll(async () => {
    [peer, withoutCounter] = await Promise.all([
      startPeer(ON_LINE),
      // An older card without upsSecondsOnBattery.
      startPeer(ON_BATTERY, ["upsSecondsOnBattery"]),
    ]);
  });

  afterAll(async () => {
    await Promise.all([peer?.stop(), withoutCounter?.stop()]);
  });

  it.each(VERSIONS)("v%s: follows on line → on battery → low battery", async (version) => {
    const source = new SnmpUpsSource(configFor(peer, version));
    try {
      await peer.power(ON_LINE);
      expect(await source.read()).toMatchObject({
        kind: "reading",
        onBattery: false,
        lowBattery: false,
        chargePercent: 100,
        runtimeSeconds: 1800,
        reportedSecondsOnBattery: 0,
        rawStatus: "upsOutputSource=normal(3) upsBatteryStatus=batteryNormal(2)",
      });
      await peer.power(ON_BATTERY);
      expect(await source.read()).toMatchObject({
        kind: "reading",
        onBattery: true,
        lowBattery: false,
        chargePercent: 57,
        // Whole minutes on the wire: 1026 s is 17 min.
        runtimeSeconds: 17 * 60,
      });
      await peer.power(LOW_BATTERY);
      expect(await source.read()).toMatchObject({
        kind: "reading",
        onBattery: true,
        lowBattery: true,
        chargePercent: 8,
        runtimeSeconds: 2 * 60,
        rawStatus: "upsOutputSource=battery(5) upsBatteryStatus=batteryLow(3)",
      });
    } finally {
      await source.close();
      await peer.power(ON_LINE);
    }
  });

  it.each(VERSIONS)(
    "v%s: reads an agent without upsSecondsOnBattery (v1: after noSuchName, one object at a time)",
    async (version) => {
      const source = new SnmpUpsSource(configFor(withoutCounter, version));
      try {
        for (let poll = 0; poll < 2; poll += 1) {
          expect(await source.read()).toMatchObject({
            kind: "reading",
            onBattery: true,
            chargePercent: 57,
            reportedSecondsOnBattery: null,
          });
        }
      } finally {
        await source.close();
      }
    },
  );

  it.each(["1", "2c"] as const)(
    "v%s: a wrong community gets no answer, and no reading",
    async (version) => {
      const source = new SnmpUpsSource(configFor(peer, version, { community: "wrong" }), {
        deadlineMs: 600,
      });
      try {
        const reading = await source.read();
        expect(reading.kind).toBe("unreliable");
        expect(reading.kind === "unreliable" && reading.reason).toBe(
          `SNMP agent at 127.0.0.1:${peer.port} (v${version}) did not answer within 0.6 s: check the address and port, that the agent runs, and the community (an agent stays silent on a wrong community)`,
        );
      } finally {
        await source.close();
      }
    },
  );

  it("v3: a wrong authentication key gets no reading", async () => {
    const source = new SnmpUpsSource(configFor(peer, "3", { authKey: "not-the-auth-key" }), {
      deadlineMs: 600,
    });
    try {
      const reading = await source.read();
      // snmpd reports usmStatsWrongDigests; net-snmp's agent (the lab) stays silent.
      expect(reading.kind === "unreliable" && reading.reason).toMatch(
        peer.name === "snmpd"
          ? /^SNMP agent at 127\.0\.0\.1:\d+ \(v3\) refused the request: Wrong Digest.*Check the SNMP user name and keys$/
          : /^SNMP agent at 127\.0\.0\.1:\d+ \(v3\) did not answer within 0\.6 s/,
      );
      expect(JSON.stringify(reading)).not.toContain("not-the-auth-key");
    } finally {
      await source.close();
    }
  });

  it("v3: an unknown user is refused, and no reading", async () => {
    const source = new SnmpUpsSource(configFor(peer, "3", { user: "nobody" }));
    try {
      const reading = await source.read();
      expect(reading.kind === "unreliable" && reading.reason).toMatch(/refused the request/);
    } finally {
      await source.close();
    }
  });
});

describe("SNMP source against the lab UPS", () => {
  it("asks a v1 agent about a missing object once, not on every poll", async () => {
    const peer = await startLabSnmpTestPeer(ON_BATTERY, ["upsSecondsOnBattery"]);
    const source = new SnmpUpsSource(configFor(peer, "1"));
    try {
      await source.read();
      const afterFirst = peer.lab!.snmpRequests;
      // The whole GET failed (noSuchName), then one GET per polled object.
      expect(afterFirst).toBe(1 + 5);
      await source.read();
      expect(peer.lab!.snmpRequests - afterFirst).toBe(1);
    } finally {
      await source.close();
      await peer.stop();
    }
  });

  it("reads an agent that went silent as no reading within the deadline, and recovers", async () => {
    const lab = await startLabUps({ nut: false });
    const snmp = lab.snmp!;
    const source = new SnmpUpsSource(
      { type: "snmp", version: "2c", host: snmp.host, port: snmp.port, community: snmp.community },
      { deadlineMs: 600 },
    );
    try {
      expect((await source.read()).kind).toBe("reading");
      await lab.control.setReachability("silent");
      expect(await source.read()).toMatchObject({ kind: "unreliable" });
      await lab.control.setReachability("reachable");
      expect((await source.read()).kind).toBe("reading");
    } finally {
      await source.close();
      await lab.stop();
    }
  });

  it("reports the UPS's stale on-battery counter (PVE-UPS #25) for the record only", async () => {
    const lab = await startLabUps({ nut: false });
    const snmp = lab.snmp!;
    const source = new SnmpUpsSource({
      type: "snmp",
      version: "2c",
      host: snmp.host,
      port: snmp.port,
      community: snmp.community,
    });
    try {
      lab.control.setStaleCounterOnNextOutage(900);
      lab.control.set({ held: true });
      lab.control.pullPlug();
      // The outage is seconds old; the card says 900 s. The reading carries the claim as
      // reported — deciding on the console's own clock is the monitor's job.
      expect(await source.read()).toMatchObject({
        kind: "reading",
        onBattery: true,
        reportedSecondsOnBattery: 900,
      });
    } finally {
      await source.close();
      await lab.stop();
    }
  });
});
