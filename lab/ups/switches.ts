import { z } from "zod";

import {
  booleanSwitch,
  choiceSwitch,
  optionalNumberSwitch,
  type FaultSwitch,
  type SwitchRegistry,
} from "../control/switches";
import type { LabUpsController } from "./lab-ups";
import type { LabNutDriverState, LabNutReachability } from "./nut-server";

/** The lab UPS's switches and actions (`ups.*`) for the control page and API. */
export function registerUpsSwitches(
  registry: SwitchRegistry,
  ups: LabUpsController,
): SwitchRegistry {
  return registry
    .register(
      booleanSwitch({
        name: "ups.mains",
        description: "Mains present. Off = the plug is pulled: the UPS runs on battery and drains.",
        get: () => ups.snapshot().mains,
        set: (value) => ups.set({ mains: value }),
      }),
    )
    .register(
      percentSwitch({
        name: "ups.charge",
        description: "Battery charge now (it keeps falling on battery and rising on mains).",
        get: () => Math.round(ups.snapshot().chargePercent),
        set: (value) => ups.set({ chargePercent: value }),
      }),
    )
    .register({
      name: "ups.runtime",
      description:
        "Runtime the UPS estimates now, in seconds; it keeps falling in proportion to the charge.",
      input: { type: "number", nullable: false, min: 0, max: 86_400, unit: "s" },
      schema: z.number().int().min(0).max(86_400),
      get: () => Math.round(ups.snapshot().runtimeSeconds),
      set: (value: number) => ups.set({ runtimeSeconds: value }),
    } satisfies FaultSwitch<number>)
    .register(
      percentSwitch({
        name: "ups.lowBatteryPercent",
        description: "At or below this charge the UPS reports low battery (LB, batteryLow).",
        get: () => ups.snapshot().lowBatteryPercent,
        set: (value) => ups.set({ lowBatteryPercent: value }),
      }),
    )
    .register(
      booleanSwitch({
        name: "ups.forcedShutdown",
        description:
          "NUT's forced-shutdown flag (FSD), as the UPS's primary upsmon sets it: counts as on battery and low battery.",
        get: () => ups.snapshot().forcedShutdown,
        set: (value) => ups.set({ forcedShutdown: value }),
      }),
    )
    .register(
      booleanSwitch({
        name: "ups.hold",
        description: "Time stands still for the UPS: charge, runtime and counters stop changing.",
        get: () => ups.snapshot().held,
        set: (value) => ups.set({ held: value }),
      }),
    )
    .register(
      choiceSwitch<LabNutDriverState>({
        name: "ups.nutDriver",
        description:
          "The NUT driver: stale = upsd answers ERR DATA-STALE, not-connected = ERR DRIVER-NOT-CONNECTED.",
        options: ["connected", "stale", "not-connected"],
        get: () => ups.driver,
        set: (value) => ups.setDriver(value),
      }),
    )
    .register(
      choiceSwitch<LabNutReachability>({
        name: "ups.reachability",
        description:
          "refused = the NUT port is closed; silent = connections accepted, nothing answered. SNMP requests go unanswered in both.",
        options: ["reachable", "refused", "silent"],
        get: () => ups.reachability,
        set: (value) => ups.setReachability(value),
      }),
    )
    .register(
      optionalNumberSwitch({
        name: "ups.staleCounterSeconds",
        description:
          "On the next outage the UPS's own seconds-on-battery counter starts at this value instead of 0 (PVE-UPS #25); empty = off.",
        min: 0,
        max: 864_000,
        unit: "s",
        get: () => ups.staleCounterOnNextOutage,
        set: (value) => ups.setStaleCounterOnNextOutage(value),
      }),
    )
    .registerAction({
      name: "ups.pullPlug",
      description: "Mains fails: the UPS goes on battery.",
      run: () => ups.pullPlug(),
    })
    .registerAction({
      name: "ups.restore",
      description: "Mains comes back: the UPS goes on line and charges.",
      run: () => ups.restore(),
    })
    .registerAction({
      name: "ups.jumpToLowBattery",
      description: "Straight to on battery at the low-battery threshold (OB LB without warning).",
      run: () => ups.jumpToLowBattery(),
    });
}

function percentSwitch(init: {
  name: string;
  description: string;
  get(): number;
  set(value: number): void;
}): FaultSwitch<number> {
  return {
    ...init,
    input: { type: "number", nullable: false, min: 0, max: 100, unit: "%" },
    schema: z.number().min(0).max(100),
  };
}
