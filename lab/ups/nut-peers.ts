import { startLabUps, type LabUps } from "./lab-ups";
import { nutExchange } from "./nut-exchange";
import { nutStatus } from "./nut-face";
import { UPSD_PEER_PRIMARY, UPSD_PEER_USER, startUpsdPeer, type UpsdPeer } from "./upsd-peer";

/**
 * One NUT server for the parity tests, whichever it is: Debian's upsd with dummy-ups, or the
 * lab UPS's NUT face. The same scenarios drive both through this, in the console's terms.
 */
export type NutTestPeer = {
  name: "upsd" | "lab";
  host: "127.0.0.1";
  port: number;
  upsName: string;
  /** `upsmon secondary`, the console's user. */
  user: { username: string; password: string };
  /** `upsmon primary`, as the UPS's own upsmon (no instcmds). */
  primaryUser: { username: string; password: string };
  /** Puts the UPS in this state; upsd serves it within about a second, the lab at once. */
  power(state: NutTestPower): Promise<void>;
  /** A primary upsmon declares forced shutdown (`FSD <ups>`). */
  declareForcedShutdown(): Promise<void>;
  /** The driver stops updating: DATA-STALE (upsd: after MAXAGE). */
  freezeDriver(): Promise<void>;
  /** The driver is gone: DRIVER-NOT-CONNECTED. */
  killDriver(): Promise<void>;
  /** Back to a working driver (frozen or killed). */
  startDriver(): Promise<void>;
  /** The server stops: connections refused. */
  stopServer(): Promise<void>;
  /** The server is back (upsd restarted: FSD cleared). */
  startServer(): Promise<void>;
  /**
   * Undoes whatever a scenario left behind: a running server and driver serving this power,
   * FSD cleared. Returns once the change is made; the server may take a moment to serve it.
   */
  reset(state: NutTestPower): Promise<void>;
  stop(): Promise<void>;
};

export type NutTestPower = { mains: boolean; chargePercent: number; runtimeSeconds: number };

/** The lab's low-battery threshold, which the upsd peer's status follows too. */
const LOW_BATTERY_PERCENT = 20;

export async function startUpsdTestPeer(initial: NutTestPower): Promise<NutTestPeer> {
  const ups = "labups";
  const peer: UpsdPeer = await startUpsdPeer({ ups: [{ name: ups, vars: devVars(initial) }] });
  let served = JSON.stringify(devVars(initial));
  // upsd keeps a declared FSD until it stops; only then may a reset skip the restart.
  let forcedShutdown = false;
  const power = async (state: NutTestPower) => {
    const vars = devVars(state);
    // An unchanged file is not rewritten: dummy-ups would re-read it for nothing.
    if (JSON.stringify(vars) === served) return;
    await peer.setVars(ups, vars);
    served = JSON.stringify(vars);
  };
  const stopServer = async () => {
    await peer.stopUpsd();
    forcedShutdown = false;
  };
  return {
    name: "upsd",
    host: peer.host,
    port: peer.port,
    upsName: ups,
    user: UPSD_PEER_USER,
    primaryUser: UPSD_PEER_PRIMARY,
    power,
    async declareForcedShutdown() {
      const answers = await nutExchange(peer.port, [
        `USERNAME ${UPSD_PEER_PRIMARY.username}`,
        `PASSWORD ${UPSD_PEER_PRIMARY.password}`,
        `FSD ${ups}`,
      ]);
      if (answers[2]?.[0] !== "OK FSD-SET")
        throw new Error(`FSD refused: ${JSON.stringify(answers)}`);
      forcedShutdown = true;
    },
    freezeDriver: () => peer.stopDriver(ups, "freeze"),
    killDriver: () => peer.stopDriver(ups, "kill"),
    startDriver: () => peer.startDriver(ups),
    stopServer,
    startServer: () => peer.startUpsd(),
    async reset(state) {
      if (forcedShutdown) await stopServer();
      await peer.startDriver(ups);
      await power(state);
      await peer.startUpsd();
    },
    stop: () => peer.stop(),
  };
}

export async function startLabTestPeer(initial: NutTestPower): Promise<NutTestPeer> {
  const lab: LabUps = await startLabUps({
    name: "labups",
    lowBatteryPercent: LOW_BATTERY_PERCENT,
    nut: {
      username: UPSD_PEER_USER.username,
      password: UPSD_PEER_USER.password,
      // As the upsd peer's upsd.users and Debian's dummy-ups 2.8.0 (upsd-peer.ts).
      instcmds: ["load.off"],
      commands: ["load.off"],
    },
    snmp: false,
  });
  const nut = lab.nut!;
  const power = async (state: NutTestPower) => {
    // Held: the lab's battery would otherwise drain while upsd's .dev file stands still.
    lab.control.set({ ...state, held: true });
  };
  await power(initial);
  return {
    name: "lab",
    host: nut.host,
    port: nut.port,
    upsName: nut.upsName,
    user: { username: nut.username, password: nut.password },
    primaryUser: nut.primary,
    power,
    async declareForcedShutdown() {
      const answers = await nutExchange(nut.port, [
        `USERNAME ${nut.primary.username}`,
        `PASSWORD ${nut.primary.password}`,
        `FSD ${nut.upsName}`,
      ]);
      if (answers[2]?.[0] !== "OK FSD-SET")
        throw new Error(`FSD refused: ${JSON.stringify(answers)}`);
    },
    freezeDriver: async () => lab.control.setDriver("stale"),
    killDriver: async () => lab.control.setDriver("not-connected"),
    startDriver: async () => lab.control.setDriver("connected"),
    async stopServer() {
      await lab.control.setReachability("refused");
      // upsd forgets FSD when it stops; the lab keeps it on the UPS, so clear it with the "restart".
      lab.control.set({ forcedShutdown: false });
    },
    startServer: () => lab.control.setReachability("reachable"),
    async reset(state) {
      await lab.control.setReachability("reachable");
      lab.control.setDriver("connected");
      lab.control.set({ forcedShutdown: false });
      await power(state);
    },
    stop: () => lab.stop(),
  };
}

/** A .dev file for dummy-ups with the status the lab's NUT face would give the same power. */
function devVars(state: NutTestPower): Record<string, string> {
  const status = nutStatus({
    mains: state.mains,
    chargePercent: state.chargePercent,
    runtimeSeconds: state.runtimeSeconds,
    lowBattery: state.chargePercent <= LOW_BATTERY_PERCENT,
    // upsd adds FSD itself once declared; the driver's status never carries it.
    forcedShutdown: false,
    secondsOnBattery: 0,
    lowBatteryPercent: LOW_BATTERY_PERCENT,
    held: true,
  });
  return {
    "ups.status": status,
    "battery.charge": String(state.chargePercent),
    "battery.runtime": String(state.runtimeSeconds),
  };
}
