/**
 * The lab UPS's power: one timeline both faces (NUT server, SNMP agent) read, so they can never
 * disagree. On mains the battery charges; with the plug pulled it drains, the runtime estimate
 * falls with it, and at the low-battery threshold the UPS says so; with mains back it charges
 * again. Time is compressible like every lab duration: a nominal second lasts `timeScale` real
 * seconds. Values are computed from the clock when read, so nothing ticks in the background.
 *
 * Faithful where the console's safety depends on it:
 * - Low battery stays set after mains returns until the charge is above the threshold again
 *   (`OL CHRG LB` is what a real UPS reports while recharging from an outage).
 * - The UPS's own "seconds on battery" counter can start at a stale value on a new outage
 *   (`staleCounterOnNextOutage`): a network card once reported the previous outage's counter
 *   at the start of the next, and the hosts were shut down at once (PVE-UPS issue #25).
 */

export type PowerTimelineOptions = {
  /** Real seconds per nominal second: 1 realistic, 0.01 for tests. Default 1. */
  timeScale?: number;
  /** Nominal seconds a full battery lasts on battery. Default 1800 (30 min). */
  drainSeconds?: number;
  /** Nominal seconds from empty to full on mains. Default 7200 (2 h). */
  rechargeSeconds?: number;
  /** At or below this charge the UPS reports low battery. Default 20 %. */
  lowBatteryPercent?: number;
  /** Real clock in ms (tests pass their own). Default `performance.now`. */
  now?: () => number;
};

export type PowerSnapshot = {
  /** Mains present (the plug is in). */
  mains: boolean;
  /** 0–100, fractional: faces round as real UPSes do. */
  chargePercent: number;
  /** Estimated runtime at the current load, nominal seconds. */
  runtimeSeconds: number;
  lowBattery: boolean;
  /** The forced-shutdown flag (NUT's FSD), set from the control page. */
  forcedShutdown: boolean;
  /** The UPS's own counter of seconds on battery (0 on mains); never trustworthy. */
  secondsOnBattery: number;
  lowBatteryPercent: number;
  /** Time stands still (values frozen) — for a demo pause or a test that needs exact values. */
  held: boolean;
};

export type PowerPatch = {
  mains?: boolean;
  chargePercent?: number;
  /** Sets the runtime the UPS estimates now; it keeps falling in proportion to the charge. */
  runtimeSeconds?: number;
  lowBatteryPercent?: number;
  forcedShutdown?: boolean;
  held?: boolean;
};

export class PowerTimeline {
  readonly timeScale: number;
  private readonly drainSeconds: number;
  private readonly rechargeSeconds: number;
  private readonly now: () => number;
  private lowBatteryPercent: number;
  /** Runtime estimate per percent of charge (nominal seconds). */
  private runtimePerPercent: number;
  private mains = true;
  private forcedShutdown = false;
  private chargeAtAnchor = 100;
  private anchorSim = 0;
  private outageStartSim: number | null = null;
  private counterOffset = 0;
  /** The simulated clock: frozen value and the real time it last resumed. */
  private simAtResume = 0;
  private resumedAtReal: number;
  private held = false;
  /** PVE-UPS #25 fault: the counter the next outage starts from (null = 0, as it should). */
  staleCounterOnNextOutage: number | null = null;
  private readonly listeners = new Set<() => void>();

  constructor(options: PowerTimelineOptions = {}) {
    this.timeScale = positive(options.timeScale ?? 1, "timeScale");
    this.drainSeconds = positive(options.drainSeconds ?? 1800, "drainSeconds");
    this.rechargeSeconds = positive(options.rechargeSeconds ?? 7200, "rechargeSeconds");
    this.lowBatteryPercent = options.lowBatteryPercent ?? 20;
    this.runtimePerPercent = this.drainSeconds / 100;
    this.now = options.now ?? (() => performance.now());
    this.resumedAtReal = this.now();
  }

  snapshot(): PowerSnapshot {
    const sim = this.simNow();
    const charge = this.chargeAt(sim);
    return {
      mains: this.mains,
      chargePercent: charge,
      runtimeSeconds: charge * this.runtimePerPercent,
      lowBattery: charge <= this.lowBatteryPercent,
      forcedShutdown: this.forcedShutdown,
      secondsOnBattery:
        this.outageStartSim === null ? 0 : this.counterOffset + (sim - this.outageStartSim),
      lowBatteryPercent: this.lowBatteryPercent,
      held: this.held,
    };
  }

  /** Mains fails: the UPS goes on battery and its on-battery counter starts. */
  pullPlug(): void {
    this.set({ mains: false });
  }

  /** Mains is back: the battery charges, the counter resets. */
  restore(): void {
    this.set({ mains: true });
  }

  /** Straight to low battery on battery — the UPS that dies without warning. */
  jumpToLowBattery(): void {
    const charge = Math.min(this.chargeAt(this.simNow()), this.lowBatteryPercent);
    this.set({ mains: false, chargePercent: charge });
  }

  set(patch: PowerPatch): void {
    const sim = this.simNow();
    // Re-anchor at the current charge, so a change applies from now on.
    this.chargeAtAnchor = this.chargeAt(sim);
    this.anchorSim = sim;
    if (patch.held !== undefined && patch.held !== this.held) {
      if (patch.held) this.simAtResume = sim;
      else this.resumedAtReal = this.now();
      this.held = patch.held;
    }
    if (patch.mains !== undefined && patch.mains !== this.mains) {
      this.mains = patch.mains;
      if (this.mains) {
        this.outageStartSim = null;
        this.counterOffset = 0;
      } else {
        this.outageStartSim = sim;
        this.counterOffset = this.staleCounterOnNextOutage ?? 0;
      }
    }
    if (patch.chargePercent !== undefined) {
      this.chargeAtAnchor = clamp(patch.chargePercent, 0, 100);
    }
    if (patch.lowBatteryPercent !== undefined) {
      this.lowBatteryPercent = clamp(patch.lowBatteryPercent, 0, 100);
    }
    if (patch.runtimeSeconds !== undefined) {
      // A UPS estimates runtime from charge and load; the lab keeps their ratio.
      this.runtimePerPercent =
        this.chargeAtAnchor > 0 ? Math.max(0, patch.runtimeSeconds) / this.chargeAtAnchor : 0;
    }
    if (patch.forcedShutdown !== undefined) this.forcedShutdown = patch.forcedShutdown;
    for (const listener of this.listeners) listener();
  }

  /** Called after every change (not for the drift of time). Returns the unsubscribe. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private simNow(): number {
    if (this.held) return this.simAtResume;
    return this.simAtResume + (this.now() - this.resumedAtReal) / 1000 / this.timeScale;
  }

  private chargeAt(sim: number): number {
    const elapsed = sim - this.anchorSim;
    const rate = this.mains ? 100 / this.rechargeSeconds : -100 / this.drainSeconds;
    return clamp(this.chargeAtAnchor + rate * elapsed, 0, 100);
  }
}

function clamp(value: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, value));
}

function positive(value: number, name: string): number {
  if (!Number.isFinite(value) || value <= 0) throw new Error(`lab: ${name} must be positive`);
  return value;
}
