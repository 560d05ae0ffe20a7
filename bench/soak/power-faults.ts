import type { FaultOutcome } from "./faults";
import type { PowerFleet } from "./power-fleet";
import type { PowerFault, PowerFaultEvent } from "./schedule";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The lab UPS's faults (bench/soak/schedule.ts POWER_FAULTS). None of them may start a shutdown
 * run: the console's triggers need a reliable reading on battery, time on battery is its own
 * clock, and losing contact only raises an alarm (the lost-contact trigger is off by default).
 * `withUps` runs a fault that changes the power in its turn with the power load's actions.
 */
export function powerFaults(
  fleet: PowerFleet,
  withUps: (fault: () => Promise<FaultOutcome>) => Promise<FaultOutcome>,
) {
  const { control } = fleet.ups;
  const faults: Record<PowerFault, (event: PowerFaultEvent) => Promise<FaultOutcome>> = {
    /**
     * The NUT face refuses connections, accepts and says nothing, or its driver answers
     * DATA-STALE, for the event's window. It changes no power, so it may overlap an outage: the
     * console then sees the low battery only once the UPS answers again.
     */
    async "ups.unreachable"(event) {
      const how = (["refused", "silent", "stale"] as const)[Math.floor(event.pick * 3)]!;
      if (how === "stale") control.setDriver("stale");
      else await control.setReachability(how);
      await sleep(event.durationMs);
      if (how === "stale") control.setDriver("connected");
      else await control.setReachability("reachable");
      const what = how === "stale" ? "the NUT driver's data stale" : `the NUT face ${how}`;
      return {
        injected: true,
        detail: `${what} for ${(event.durationMs / 1000).toFixed(1)} s`,
        overAt: Date.now(),
      };
    },
    /** Mains fails and comes back every 0.3–1.5 s for the window, ending on mains. */
    "ups.mainsFlapping": (event) =>
      withUps(async () => {
        const until = Date.now() + event.durationMs;
        let flips = 0;
        while (Date.now() < until) {
          control.set({ mains: !control.snapshot().mains });
          flips += 1;
          await sleep(300 + ((event.pick * 7919 * flips) % 1) * 1200);
        }
        control.restore();
        return {
          injected: true,
          detail: `mains flapped ${flips} times in ${(event.durationMs / 1000).toFixed(1)} s`,
          overAt: Date.now(),
        };
      }),
    /**
     * An outage whose UPS counter of seconds on battery starts at a stale value beyond the
     * console's 10 min on-battery trigger (PVE-UPS #25), for the window; then mains is back.
     */
    "ups.staleCounter": (event) =>
      withUps(async () => {
        const stale = Math.round(900 + event.pick * 86_000);
        control.setStaleCounterOnNextOutage(stale);
        control.pullPlug();
        await sleep(event.durationMs);
        control.restore();
        control.setStaleCounterOnNextOutage(null);
        return {
          injected: true,
          detail: `on battery for ${(event.durationMs / 1000).toFixed(1)} s with the UPS's counter starting at ${stale} s`,
          overAt: Date.now(),
        };
      }),
  };
  return faults;
}
