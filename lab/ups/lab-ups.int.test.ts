import { afterEach, describe, expect, it } from "vitest";

import {
  ZNutSourceSchema,
  ZSnmpSourceSchema,
  type UpsReading,
  type UpsSource,
} from "@/lib/power/ups/reading";
import { NutConnectionPool } from "@/lib/power/ups/nut/pool";
import { createUpsSource } from "@/lib/power/ups/source";

import { labUpsSources, startLabUps, type LabUps } from "./lab-ups";

/**
 * The lab UPS as the console sees it: one power timeline behind a NUT server and an SNMP agent,
 * driven by the switches a person uses on the control page.
 */

let lab: LabUps | null = null;
let sources: UpsSource[] = [];

afterEach(async () => {
  await Promise.all(sources.map((source) => source.close()));
  sources = [];
  await lab?.stop();
  lab = null;
});

function sourcesOf(ups: LabUps): { nut: UpsSource; v2c: UpsSource; v3: UpsSource } {
  const settings = labUpsSources(ups);
  const made = {
    nut: createUpsSource(settings.nut!, { nutPool: new NutConnectionPool() }),
    v2c: createUpsSource(settings.snmpV2c!),
    v3: createUpsSource(settings.snmpV3!),
  };
  sources.push(made.nut, made.v2c, made.v3);
  return made;
}

async function readAll(all: Record<string, UpsSource>): Promise<Record<string, UpsReading>> {
  const entries = await Promise.all(
    Object.entries(all).map(async ([name, source]) => [name, await source.read()] as const),
  );
  return Object.fromEntries(entries);
}

function power(reading: UpsReading | undefined) {
  if (reading?.kind !== "reading") throw new Error(`no reading: ${JSON.stringify(reading)}`);
  return {
    onBattery: reading.onBattery,
    lowBattery: reading.lowBattery,
    chargePercent: reading.chargePercent,
  };
}

describe("the lab UPS", () => {
  it("tells the same power story over NUT and SNMP, from one timeline", async () => {
    lab = await startLabUps({ lowBatteryPercent: 20 });
    const all = sourcesOf(lab);
    lab.control.set({ held: true, chargePercent: 100 });

    for (const step of [
      () => lab!.control.pullPlug(),
      () => lab!.control.set({ chargePercent: 57 }),
      () => lab!.control.jumpToLowBattery(),
      () => lab!.control.restore(),
    ]) {
      step();
      const readings = await readAll(all);
      expect(power(readings.v2c)).toEqual(power(readings.nut));
      expect(power(readings.v3)).toEqual(power(readings.nut));
    }
    // Mains back at 20 %: on line, battery still low (OL CHRG LB).
    expect(power((await readAll(all)).nut)).toEqual({
      onBattery: false,
      lowBattery: true,
      chargePercent: 20,
    });
  });

  it("prints settings the console's own UPS schemas accept as they are", async () => {
    lab = await startLabUps();
    const settings = labUpsSources(lab);
    expect(ZNutSourceSchema.parse(settings.nut)).toEqual(settings.nut);
    expect(ZSnmpSourceSchema.parse(settings.snmpV2c)).toEqual(settings.snmpV2c);
    expect(ZSnmpSourceSchema.parse(settings.snmpV3)).toEqual(settings.snmpV3);
  });

  it("drains by itself on battery, time compressed", async () => {
    // A nominal 30-minute battery lasts 1.8 real seconds.
    lab = await startLabUps({ timeScale: 0.001, drainSeconds: 1800 });
    const { nut } = sourcesOf(lab);
    lab.control.pullPlug();
    const first = power(await nut.read());
    await new Promise((resolve) => setTimeout(resolve, 300));
    const later = power(await nut.read());
    expect(later.onBattery).toBe(true);
    expect(later.chargePercent!).toBeLessThan(first.chargePercent!);
  });

  it("is driven by its switches and actions, as from the control page", async () => {
    lab = await startLabUps();
    const { nut, v2c } = sourcesOf(lab);
    await lab.switches.run("ups.jumpToLowBattery");
    expect(power(await nut.read())).toMatchObject({ onBattery: true, lowBattery: true });

    expect(await lab.switches.apply({ "ups.nutDriver": "stale" })).toEqual({ ok: true });
    const stale = await nut.read();
    expect(stale.kind === "unreliable" && stale.reason).toMatch(/ERR DATA-STALE/);

    expect(await lab.switches.apply({ "ups.nutDriver": "connected", "ups.mains": true })).toEqual({
      ok: true,
    });
    expect(power(await nut.read()).onBattery).toBe(false);

    expect(await lab.switches.apply({ "ups.reachability": "refused" })).toEqual({ ok: true });
    const refused = await nut.read();
    expect(refused.kind === "unreliable" && refused.reason).toMatch(/refused the connection/);

    const invalid = await lab.switches.apply({ "ups.charge": 140, "ups.mains": false });
    expect(invalid.ok).toBe(false);
    // Nothing was applied: still on mains.
    expect(lab.control.snapshot().mains).toBe(true);

    await lab.switches.apply({ "ups.reachability": "reachable" });
    expect((await v2c.read()).kind).toBe("reading");
  });

  it("logs out of the NUT face when a source closes, and never records a password", async () => {
    lab = await startLabUps();
    const { nut } = sourcesOf(lab);
    await nut.read();
    await nut.close();
    const lines = lab.nutCommands.map((command) => command.line);
    expect(lines).toEqual([
      `USERNAME "${lab.nut!.username}"`,
      "PASSWORD ********",
      "LOGIN labups",
      "LIST VAR labups",
      "LOGOUT",
    ]);
  });

  it("waits after a silent server before connecting again (backoff), and says when", async () => {
    lab = await startLabUps({ snmp: false });
    const source = createUpsSource(labUpsSources(lab).nut!, {
      deadlineMs: 300,
      nutPool: new NutConnectionPool({ reconnectBackoff: { initialMs: 5000, maxMs: 5000 } }),
    });
    sources.push(source);
    await lab.control.setReachability("silent");
    const first = await source.read();
    expect(first.kind === "unreliable" && first.reason).toMatch(/did not answer within 0\.3 s$/);
    const commandsBefore = lab.nutCommands.length;
    const second = await source.read();
    expect(second.kind === "unreliable" && second.reason).toMatch(
      /did not answer within 0\.3 s \(next attempt in [\d.]+ s\)$/,
    );
    // No new connection, no new command: the second read did not touch the server.
    expect(lab.nutCommands.length).toBe(commandsBefore);
  });
});
