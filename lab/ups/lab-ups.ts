import { randomBytes } from "node:crypto";

import type { TNutSource, TSnmpSource } from "@/lib/power/ups/reading";
import type { UpsMibObject } from "@/lib/power/ups/snmp/ups-mib";

import type { ControlUps } from "../control/server";
import { SwitchRegistry } from "../control/switches";
import { labNutDevice, nutStatus } from "./nut-face";
import {
  LabNutServer,
  type LabNutCommand,
  type LabNutDriverState,
  type LabNutReachability,
} from "./nut-server";
import { LabUpsOutput, type LabUpsOutputEvent, type LabUpsOutputOptions } from "./output";
import { LabSnmpAgent, type LabSnmpV3User } from "./snmp-agent";
import { upsMibValues } from "./snmp-face";
import { registerUpsSwitches } from "./switches";
import {
  PowerTimeline,
  type PowerPatch,
  type PowerSnapshot,
  type PowerTimelineOptions,
} from "./timeline";

export type StartLabUpsOptions = Omit<PowerTimelineOptions, "now"> & {
  /** The UPS's NUT name (`upsc <name>@host`). Default `labups`. */
  name?: string;
  /**
   * The NUT server face; `false` = none. Credentials are generated unless given. `instcmds`:
   * what upsd.users lets the console's user send (default `shutdown.return`, as docs/power.md
   * tells an admin to set up); `commands`: what the driver offers (default `shutdown.return`).
   */
  nut?:
    | false
    | {
        port?: number;
        username?: string;
        password?: string;
        instcmds?: readonly string[];
        commands?: readonly string[];
      };
  /** The output's delays (`ups.delay.shutdown`, `ups.delay.start`), nominal seconds. */
  output?: LabUpsOutputOptions;
  /** The SNMP agent face; `false` = none. `v3: false` = communities only. */
  snmp?: false | { port?: number; community?: string; v3?: false | Partial<LabSnmpV3User> };
  /** UPS-MIB objects the SNMP face does not serve (e.g. a card without upsSecondsOnBattery). */
  snmpMissing?: readonly UpsMibObject[];
  /** Real clock in ms, for tests that drive time themselves. */
  now?: () => number;
};

export type LabUpsNutEndpoint = {
  host: "127.0.0.1";
  port: number;
  upsName: string;
  /** The console's user: `upsmon secondary`. */
  username: string;
  password: string;
  /** A `upsmon primary` user (may send FSD), as the UPS's own upsmon would have. */
  primary: { username: string; password: string };
};

export type LabUpsSnmpEndpoint = {
  host: "127.0.0.1";
  port: number;
  community: string;
  v3: LabSnmpV3User | null;
};

/** The switches of the lab UPS, from code (the control page and API use `switches`). */
export type LabUpsController = {
  snapshot(): PowerSnapshot;
  pullPlug(): void;
  restore(): void;
  /** On battery at the low-battery threshold at once (the UPS that dies without warning). */
  jumpToLowBattery(): void;
  set(patch: PowerPatch): void;
  /** The NUT driver: `stale` answers DATA-STALE, `not-connected` DRIVER-NOT-CONNECTED. */
  readonly driver: LabNutDriverState;
  setDriver(state: LabNutDriverState): void;
  /** Both faces: `refused` closes the NUT port, `silent` answers nothing (SNMP drops either way). */
  readonly reachability: LabNutReachability;
  setReachability(state: LabNutReachability): Promise<void>;
  /** PVE-UPS #25: the UPS's own on-battery counter starts here on the next outage (null = 0). */
  readonly staleCounterOnNextOutage: number | null;
  setStaleCounterOnNextOutage(seconds: number | null): void;
  /** Power on the UPS's sockets (off after shutdown.return's delay until mains is back). */
  readonly outputOn: boolean;
  /** Called at every change of the output (what feeds the lab nodes). Returns the unsubscribe. */
  onOutputChange(listener: (on: boolean) => void): () => void;
  /** Every instant command the UPS took and every change of its output. */
  readonly outputEvents: readonly LabUpsOutputEvent[];
};

export type LabUps = {
  name: string;
  nut: LabUpsNutEndpoint | null;
  snmp: LabUpsSnmpEndpoint | null;
  control: LabUpsController;
  /** Every switch and action, for the control page and API (`ups.*`). */
  switches: SwitchRegistry;
  /** Every line the NUT face received, passwords masked. */
  readonly nutCommands: readonly LabNutCommand[];
  /** Requests the SNMP face received (answered or dropped). */
  readonly snmpRequests: number;
  stop(): Promise<void>;
};

/**
 * A lab UPS you can unplug (lab.md, "A UPS"): one power timeline, a NUT server face and an
 * SNMP agent face both drawn from it, and switches for everything a real UPS does to a console.
 */
export async function startLabUps(options: StartLabUpsOptions = {}): Promise<LabUps> {
  const name = options.name ?? "labups";
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(name)) throw new Error(`lab: bad UPS name ${name}`);
  const timeline = new PowerTimeline(options);
  const output = new LabUpsOutput(timeline, options.output);
  let driver: LabNutDriverState = "connected";
  let reachability: LabNutReachability = "reachable";

  let nutServer: LabNutServer | null = null;
  let nut: LabUpsNutEndpoint | null = null;
  let snmpAgent: LabSnmpAgent | null = null;
  let snmpEndpoint: LabUpsSnmpEndpoint | null = null;
  try {
    if (options.nut !== false) {
      const username = options.nut?.username ?? "clupilot";
      const password = options.nut?.password ?? secret();
      const primary = { username: "upsprimary", password: secret() };
      nutServer = await LabNutServer.start({
        devices: () => [
          labNutDevice({
            name,
            timeline,
            driver: () => driver,
            output,
            commands: (options.nut || undefined)?.commands ?? ["shutdown.return"],
          }),
        ],
        users: [
          {
            username,
            password,
            upsmon: "secondary",
            instcmds: options.nut?.instcmds ?? ["shutdown.return"],
          },
          { ...primary, upsmon: "primary" },
        ],
        ...(options.nut?.port === undefined ? {} : { port: options.nut.port }),
      });
      nut = {
        host: "127.0.0.1",
        port: nutServer.port,
        upsName: name,
        username,
        password,
        primary,
      };
    }
    if (options.snmp !== false) {
      const community = options.snmp?.community ?? secret();
      const v3Option = options.snmp?.v3;
      const v3: LabSnmpV3User | null =
        v3Option === false
          ? null
          : {
              user: v3Option?.user ?? "clupilot",
              authProtocol: v3Option?.authProtocol ?? "sha",
              authKey: v3Option?.authKey ?? secret(),
              privProtocol: v3Option?.privProtocol ?? "aes",
              privKey: v3Option?.privKey ?? secret(),
            };
      const missing = new Set(options.snmpMissing ?? []);
      snmpAgent = await LabSnmpAgent.start({
        communities: [community],
        v3Users: v3 === null ? [] : [v3],
        values: () => upsMibValues(timeline.snapshot(), missing),
        ...(options.snmp?.port === undefined ? {} : { port: options.snmp.port }),
      });
      snmpEndpoint = { host: "127.0.0.1", port: snmpAgent.port, community, v3 };
    }
  } catch (error) {
    output.stop();
    await nutServer?.stop();
    await snmpAgent?.stop();
    throw error;
  }

  const control: LabUpsController = {
    snapshot: () => timeline.snapshot(),
    pullPlug: () => timeline.pullPlug(),
    restore: () => timeline.restore(),
    jumpToLowBattery: () => timeline.jumpToLowBattery(),
    set: (patch) => timeline.set(patch),
    get driver() {
      return driver;
    },
    setDriver(state) {
      driver = state;
    },
    get reachability() {
      return reachability;
    },
    async setReachability(state) {
      reachability = state;
      if (snmpAgent !== null) snmpAgent.silent = state !== "reachable";
      await nutServer?.setReachability(state);
    },
    get staleCounterOnNextOutage() {
      return timeline.staleCounterOnNextOutage;
    },
    setStaleCounterOnNextOutage(seconds) {
      timeline.staleCounterOnNextOutage = seconds;
    },
    get outputOn() {
      return output.isOn;
    },
    onOutputChange: (listener) => output.onChange(listener),
    get outputEvents() {
      return output.events;
    },
  };
  let stopping: Promise<void> | null = null;
  return {
    name,
    nut,
    snmp: snmpEndpoint,
    control,
    switches: registerUpsSwitches(new SwitchRegistry(), control),
    get nutCommands() {
      return nutServer?.commands ?? [];
    },
    get snmpRequests() {
      return snmpAgent?.requests ?? 0;
    },
    stop() {
      output.stop();
      stopping ??= Promise.all([nutServer?.stop(), snmpAgent?.stop()]).then(() => {});
      return stopping;
    },
  };
}

/**
 * The console's settings for each way of reading the lab UPS (validated by the same zod schemas
 * as the console's UPS form): NUT, SNMP v2c and SNMP v3 authPriv, as far as its faces run.
 */
export function labUpsSources(ups: LabUps): {
  nut: TNutSource | null;
  snmpV2c: TSnmpSource | null;
  snmpV3: TSnmpSource | null;
} {
  const { nut, snmp } = ups;
  return {
    nut:
      nut === null
        ? null
        : {
            type: "nut",
            host: nut.host,
            port: nut.port,
            upsName: nut.upsName,
            username: nut.username,
            password: nut.password,
          },
    snmpV2c:
      snmp === null
        ? null
        : {
            type: "snmp",
            version: "2c",
            host: snmp.host,
            port: snmp.port,
            community: snmp.community,
          },
    snmpV3:
      snmp?.v3 == null
        ? null
        : { type: "snmp", version: "3", host: snmp.host, port: snmp.port, ...snmp.v3 },
  };
}

/** The lab UPS as the control page and API show it. */
export function controlUps(ups: LabUps): ControlUps {
  return {
    name: ups.name,
    endpoints: { nut: ups.nut, snmp: ups.snmp },
    power() {
      const power = ups.control.snapshot();
      return {
        status: nutStatus(power),
        mains: power.mains,
        chargePercent: Math.round(power.chargePercent * 10) / 10,
        runtimeSeconds: Math.round(power.runtimeSeconds),
        lowBattery: power.lowBattery,
        secondsOnBattery: Math.round(power.secondsOnBattery),
        held: power.held,
        nutDriver: ups.control.driver,
        reachability: ups.control.reachability,
        // The sockets (off after shutdown.return's delay until mains is back) and every
        // instant command the UPS took, with each switch of its output.
        outputOn: ups.control.outputOn,
        outputEvents: ups.control.outputEvents.map((e) => ({
          at: e.at.toISOString(),
          what: e.what,
          detail: e.detail,
        })),
      };
    },
    switches: ups.switches,
  };
}

function secret(): string {
  return randomBytes(12).toString("base64url");
}
