import type { LabNutDevice, LabNutDriverState } from "./nut-server";
import type { LabUpsOutput } from "./output";
import type { PowerSnapshot, PowerTimeline } from "./timeline";

/**
 * The lab UPS as a NUT device: the variables a NUT driver publishes for a small line-interactive
 * UPS (names from NUT's docs/nut-names.txt), drawn from the power timeline at each request.
 */
export function labNutDevice(init: {
  name: string;
  timeline: PowerTimeline;
  driver: () => LabNutDriverState;
  output: LabUpsOutput;
  /** The instant commands the driver offers (LIST CMD). */
  commands: readonly string[];
}): LabNutDevice {
  const { output } = init;
  return {
    name: init.name,
    description: "CluPilot lab UPS",
    vars: () => {
      const vars = nutVars(init.timeline.snapshot());
      // The delays shutdown.return honours, as drivers publish them (nut-names.txt).
      vars.set("ups.delay.shutdown", String(output.offDelaySeconds));
      vars.set("ups.delay.start", String(output.startDelaySeconds));
      // A UPS whose output is off says OFF (nut-names.txt, ups.status) in place of OL/OB's company.
      if (!output.isOn) vars.set("ups.status", `OFF ${vars.get("ups.status")}`);
      return new Map([...vars].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    },
    driver: init.driver,
    // The same flag the control page sets; like upsd, only a restart (or the switch) clears it.
    forceShutdown: () => init.timeline.set({ forcedShutdown: true }),
    commands: () => init.commands,
    instantCommand: (command) => output.command(command),
  };
}

export function nutVars(power: PowerSnapshot): Map<string, string> {
  return new Map([
    ["battery.charge", String(Math.round(power.chargePercent))],
    ["battery.charge.low", String(Math.round(power.lowBatteryPercent))],
    ["battery.runtime", String(Math.round(power.runtimeSeconds))],
    ["battery.type", "PbAc"],
    ["device.mfr", "CluPilot"],
    ["device.model", "Lab UPS 1500"],
    ["device.type", "ups"],
    ["driver.name", "clupilot-lab"],
    ["input.voltage", power.mains ? "230.0" : "0.0"],
    ["output.voltage", "230.0"],
    ["ups.load", "35"],
    ["ups.mfr", "CluPilot"],
    ["ups.model", "Lab UPS 1500"],
    ["ups.status", nutStatus(power)],
  ]);
}

/** `ups.status` tokens in the order NUT drivers set them. */
export function nutStatus(power: PowerSnapshot): string {
  const tokens: string[] = [];
  // upsd puts FSD first when upsmon's primary has set it.
  if (power.forcedShutdown) tokens.push("FSD");
  tokens.push(power.mains ? "OL" : "OB");
  if (power.mains && power.chargePercent < 100) tokens.push("CHRG");
  if (!power.mains) tokens.push("DISCHRG");
  if (power.lowBattery) tokens.push("LB");
  return tokens.join(" ");
}
