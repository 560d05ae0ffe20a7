import type { Transaction } from "@/lib/db/client";
import { safeErrorSummary } from "@/lib/errors";
import type { Latch, UpsMonitorState } from "@/lib/power/triggers/state";
import { OfflineShutdown } from "./offline-shutdown";
import { recordOfflineShutdown } from "./record-offline-shutdown";
import type { StandbyPlan } from "./standby-plan";

/** How recent a reading must be to count as this process knowing the UPS. */
const FRESH_MS = 5000;

/** A UPS this process watches, as its loop knows it now. */
export type WatchedUps = { id: string; state: UpsMonitorState; confirmSeconds: number };

/**
 * The power monitor's shutdowns without the database (./offline-shutdown.ts): at most one per
 * UPS and outage (its latch's time), started by a UPS loop whose transaction could not be
 * written, and recorded by the monitor's supervisor (one place, one at a time: `flush`) once it
 * has ended and the database answers again. Until it is recorded, that UPS's loop starts no run
 * of its own: the run's coverage would not see the calls yet, and would call the same targets.
 */
export class OfflineShutdowns {
  private readonly all = new Map<string, OfflineShutdown>();
  private readonly recorded = new Set<string>();

  constructor(
    private readonly options: {
      standby: () => StandbyPlan | null;
      watched: () => WatchedUps[];
      log: (line: string) => void;
    },
  ) {}

  /** Acts on the plan in memory for this outage, unless it already does (or did). */
  start(ups: { id: string; name: string }, latch: Latch, why: string): void {
    const key = `${ups.id}@${latch.at.toISOString()}`;
    if (this.all.has(key)) return;
    const standby = this.options.standby();
    if (!standby) {
      this.options.log(
        `UPS ${ups.name}: a shutdown is due and ${why}, but this worker holds no plan in memory yet (it started while the database was away): nothing can be sent until the database answers`,
      );
      return;
    }
    const shutdown = new OfflineShutdown({
      standby,
      ups,
      latch,
      why,
      latchedAt: () => this.latchedAt(ups.id, latch),
      unknownFeeds: () => this.unknown(),
      onMains: () => this.onMains(false),
      mainsHeld: () => this.onMains(true),
      log: this.options.log,
    });
    this.all.set(key, shutdown);
  }

  /** Whether a shutdown without the database still acts for this UPS, or is not recorded yet. */
  holds(upsId: string): boolean {
    return [...this.all.values()].some(
      (s) => s.record.ups.id === upsId && !this.recorded.has(s.record.runId),
    );
  }

  /**
   * Records, in the caller's transaction, every shutdown that has ended and is not recorded
   * yet; returns their run ids, for `committed` once the transaction is.
   */
  async flush(tx: Transaction): Promise<string[]> {
    const ended = [...this.all.values()].filter(
      (s) => s.record.finishedAt !== null && !this.recorded.has(s.record.runId),
    );
    for (const shutdown of ended) await recordOfflineShutdown(tx, shutdown.record);
    return ended.map((s) => s.record.runId);
  }

  committed(runIds: readonly string[]): void {
    for (const id of runIds) {
      this.recorded.add(id);
      const entry = [...this.all.values()].find((s) => s.record.runId === id);
      this.options.log(
        `UPS ${entry?.record.ups.name ?? "?"}: the shutdown done without the database is recorded as power-shutdown run ${id}`,
      );
    }
  }

  /** Whether something is left to record. */
  get pending(): boolean {
    return [...this.all.values()].some((s) => !this.recorded.has(s.record.runId));
  }

  async stop(): Promise<void> {
    await Promise.all([...this.all.values()].map((s) => s.stop().catch(() => {})));
  }

  private latchedAt(upsId: string, latch: Latch): Map<string, Date> {
    const latched = new Map<string, Date>();
    for (const ups of this.options.watched()) {
      const l = ups.state.latch;
      if (l && !l.dormant) latched.set(ups.id, l.at);
    }
    latched.set(upsId, latch.at);
    return latched;
  }

  /** UPSes this process has no fresh reliable reading of: every UPS it does not watch too. */
  private unknown(): Set<string> {
    const known = new Set(
      this.options
        .watched()
        .filter((u) => u.state.reachable === true && fresh(u.state))
        .map((u) => u.id),
    );
    const standby = this.options.standby();
    return new Set([...(standby?.ups.keys() ?? [])].filter((id) => !known.has(id)));
  }

  private onMains(held: boolean): Map<string, boolean> {
    return new Map(
      this.options.watched().map((u) => {
        const reading = u.state.lastReading;
        const onMains =
          u.state.reachable === true && fresh(u.state) && reading?.onBattery === false;
        return [
          u.id,
          onMains && (!held || (u.state.durations.mainsMs ?? 0) >= u.confirmSeconds * 1000),
        ];
      }),
    );
  }
}

function fresh(state: UpsMonitorState): boolean {
  const at = state.lastReading?.at;
  return at !== undefined && Date.now() - at.getTime() <= FRESH_MS;
}

/** One line for the log: what kept the trigger path from writing. */
export function describeFailure(error: unknown, unreachable: boolean): string {
  return unreachable
    ? `the database is unreachable (${safeErrorSummary(error)})`
    : `the trigger path failed (${safeErrorSummary(error)})`;
}
