import type { PowerTimeline } from "./timeline";

/**
 * The lab UPS's output — the sockets the lab nodes it feeds are plugged into — and the instant
 * commands that switch it, as NUT's docs/nut-names.txt ("Instant commands") names them:
 *
 * - `shutdown.return`: "Turn off the load possibly after a delay and return when power is
 *   back". The output goes off `ups.delay.shutdown` seconds after the command (whether mains is
 *   back by then or not: a real UPS does not take the command back), and comes on again
 *   `ups.delay.start` seconds after mains is present — at once counted from the moment it went
 *   off, if mains was back already.
 * - `load.off`: "Turn off the load immediately"; it stays off (nothing turns it on again here).
 *
 * Delays are nominal seconds, compressed by the timeline's time scale like every lab duration.
 * Every change is logged with the command that caused it.
 */

export type LabUpsOutputEvent = {
  at: Date;
  what: "command" | "output-off" | "output-on";
  detail: string;
};

export type LabUpsOutputOptions = {
  /** `ups.delay.shutdown`: nominal seconds from shutdown.return to the output going off. Default 20. */
  offDelaySeconds?: number;
  /** `ups.delay.start`: nominal seconds with mains present before the output comes back. Default 30. */
  startDelaySeconds?: number;
};

export class LabUpsOutput {
  readonly offDelaySeconds: number;
  readonly startDelaySeconds: number;
  /** Every command taken and every change of the output, oldest first. */
  readonly events: LabUpsOutputEvent[] = [];
  private on = true;
  /** The output comes back once mains is present (after shutdown.return). */
  private returnsWithMains = false;
  private offTimer: NodeJS.Timeout | null = null;
  private startTimer: NodeJS.Timeout | null = null;
  private readonly listeners = new Set<(on: boolean) => void>();
  private readonly unsubscribe: () => void;

  constructor(
    private readonly timeline: PowerTimeline,
    options: LabUpsOutputOptions = {},
  ) {
    this.offDelaySeconds = options.offDelaySeconds ?? 20;
    this.startDelaySeconds = options.startDelaySeconds ?? 30;
    this.unsubscribe = timeline.onChange(() => this.mainsChanged());
  }

  /** Power on the UPS's sockets now. */
  get isOn(): boolean {
    return this.on;
  }

  /** Called with the new state at every change of the output. Returns the unsubscribe. */
  onChange(listener: (on: boolean) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** An instant command the UPS took (upsd answered OK for it). */
  command(name: string): void {
    this.log("command", name);
    switch (name) {
      case "shutdown.return":
        if (this.offTimer !== null) return; // already counting down: a second one changes nothing
        this.offTimer = setTimeout(() => {
          this.offTimer = null;
          this.returnsWithMains = true;
          this.switchTo(false, `shutdown.return: ${this.offDelaySeconds} s delay over`);
          this.mainsChanged();
        }, this.scaledMs(this.offDelaySeconds));
        return;
      case "load.off":
        this.cancelTimers();
        this.returnsWithMains = false;
        this.switchTo(false, "load.off");
        return;
    }
  }

  stop(): void {
    this.cancelTimers();
    this.unsubscribe();
  }

  private mainsChanged(): void {
    if (this.on || !this.returnsWithMains) return;
    const mains = this.timeline.snapshot().mains;
    if (!mains) {
      // Mains went again before the start delay was over: wait for it anew.
      if (this.startTimer !== null) clearTimeout(this.startTimer);
      this.startTimer = null;
      return;
    }
    if (this.startTimer !== null) return;
    this.startTimer = setTimeout(() => {
      this.startTimer = null;
      this.returnsWithMains = false;
      this.switchTo(true, `mains present for ${this.startDelaySeconds} s (ups.delay.start)`);
    }, this.scaledMs(this.startDelaySeconds));
  }

  private switchTo(on: boolean, why: string): void {
    if (this.on === on) return;
    this.on = on;
    this.log(on ? "output-on" : "output-off", why);
    for (const listener of this.listeners) listener(on);
  }

  private log(what: LabUpsOutputEvent["what"], detail: string): void {
    this.events.push({ at: new Date(), what, detail });
  }

  private scaledMs(nominalSeconds: number): number {
    return Math.round(nominalSeconds * 1000 * this.timeline.timeScale);
  }

  private cancelTimers(): void {
    if (this.offTimer !== null) clearTimeout(this.offTimer);
    if (this.startTimer !== null) clearTimeout(this.startTimer);
    this.offTimer = null;
    this.startTimer = null;
  }
}
