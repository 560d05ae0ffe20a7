import type { UpsMibObject } from "@/lib/power/ups/snmp/ups-mib";

import { startLabUps, type LabUps } from "./lab-ups";
import type { LabSnmpV3User } from "./snmp-agent";
import { upsMibValues } from "./snmp-face";
import { startSnmpdPeer } from "./snmpd-peer";

/**
 * One SNMP agent for the SNMP source's tests, whichever it is: Debian's snmpd serving the
 * UPS-MIB through a pass script, or the lab UPS's agent. The same scenarios drive both.
 */
export type SnmpTestPeer = {
  name: "snmpd" | "lab";
  host: "127.0.0.1";
  port: number;
  community: string;
  v3: LabSnmpV3User;
  power(state: SnmpTestPower): Promise<void>;
  /** The lab UPS behind the lab's agent (null for snmpd). */
  lab: LabUps | null;
  stop(): Promise<void>;
};

export type SnmpTestPower = { mains: boolean; chargePercent: number; runtimeSeconds: number };

const LOW_BATTERY_PERCENT = 20;

export async function startSnmpdTestPeer(
  initial: SnmpTestPower,
  missing: readonly UpsMibObject[] = [],
): Promise<SnmpTestPeer> {
  const values = (state: SnmpTestPower) => {
    const all = upsMibValues(
      {
        ...state,
        lowBattery: state.chargePercent <= LOW_BATTERY_PERCENT,
        forcedShutdown: false,
        secondsOnBattery: state.mains ? 0 : 42,
        lowBatteryPercent: LOW_BATTERY_PERCENT,
        held: true,
      },
      new Set(missing),
    );
    return Object.fromEntries(
      Object.entries(all).filter(
        (entry): entry is [UpsMibObject, number] => typeof entry[1] === "number",
      ),
    );
  };
  const peer = await startSnmpdPeer(values(initial));
  return {
    name: "snmpd",
    host: peer.host,
    port: peer.port,
    community: peer.community,
    v3: peer.v3,
    power: (state) => peer.setValues(values(state)),
    lab: null,
    stop: () => peer.stop(),
  };
}

export async function startLabSnmpTestPeer(
  initial: SnmpTestPower,
  missing: readonly UpsMibObject[] = [],
): Promise<SnmpTestPeer> {
  const lab = await startLabUps({
    lowBatteryPercent: LOW_BATTERY_PERCENT,
    nut: false,
    snmpMissing: missing,
  });
  const snmp = lab.snmp!;
  const power = async (state: SnmpTestPower) => {
    lab.control.set({ ...state, held: true });
  };
  await power(initial);
  return {
    name: "lab",
    host: snmp.host,
    port: snmp.port,
    community: snmp.community,
    v3: snmp.v3!,
    power,
    lab,
    stop: () => lab.stop(),
  };
}
