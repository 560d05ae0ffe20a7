import { and, eq, lt, sql } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { runs, upsMonitorState, upsReadings } from "@/lib/db/schema";
import { isDatabaseUnreachable } from "@/lib/db/unreachable";
import { safeErrorSummary } from "@/lib/errors";
import { notifyLive } from "@/lib/live/notify";
import { mainsBackAfterFirstStage } from "@/lib/power/consolidate/mains-back";
import { recordPowerEvents } from "@/lib/power/records/power-events";
import { POWER_SHUTDOWN } from "@/lib/power/shutdown-pipeline/pipeline";
import { readPowerSettings } from "@/lib/power/config/power-settings-store";
import type { TriggerSettings } from "@/lib/power/config/settings";
import {
  decide,
  type Decision,
  type PowerEventDraft,
  type StageThreshold,
} from "@/lib/power/triggers/decide";
import type { Latch, UpsMonitorState } from "@/lib/power/triggers/state";
import type { UpsReading, UpsSource } from "@/lib/power/ups/reading";
import { historyPoint, keepInHistory, type HistoryPoint } from "./history-rule";
import { columnsOfState, stateOfRow } from "../triggers/monitor-state-store";
import { describeFailure, type OfflineShutdowns } from "./offline-shutdowns";
import { doneWithOutage, outageTargets, type OutageTarget } from "./outage-done";
import { startDueShutdowns, type StartedShutdown } from "./start-due-shutdowns";

/** How long a lease lasts without renewal: a dead process's UPS is taken over after this. */
export const LEASE_SECONDS = 5;
/** Readings older than this are pruned, at most once an hour. */
const HISTORY_DAYS = 7;
const PRUNE_EVERY_MS = 3_600_000;
/** While the database is away: at most this many readings and events wait in memory. */
const MAX_PENDING = 3600;
/**
 * While the trigger is latched and the console still logged in to the UPS's NUT server, how
 * often it asks its records whether the outage is done (./outage-done.ts): a NUT primary
 * waits for it meanwhile, so not much longer than the check itself takes, nor every poll.
 */
const OUTAGE_LOOK_EVERY_MS = 2000;

export type UpsLoopSettings = {
  triggers: TriggerSettings;
  pollIntervalMs: number;
  /** Consolidating clusters this UPS feeds: their first thresholds (none: no first stage). */
  stages?: readonly StageThreshold[];
};

export type UpsLoopOptions = {
  db: Database;
  ownerId: string;
  ups: { id: string; name: string };
  source: UpsSource;
  /** The state as persisted when the lease was taken. */
  state: UpsMonitorState;
  /** When that state was written (the wall clock): the gap to this process's first reading. */
  stateWrittenAt?: Date | null;
  /** The monotonic clock every duration is measured with (default: performance.now). */
  monotonicMs?: () => number;
  settings: UpsLoopSettings;
  log(line: string): void;
  /** Called once the loop has ended (stopped, or its lease was lost). */
  onEnd(reason: string): void;
  /** The shutdowns without the database: what acts when the trigger path cannot write. */
  offline?: Pick<OfflineShutdowns, "start" | "holds">;
};

class LeaseLost extends Error {}

/**
 * One UPS, polled on its persistent connection every interval, for as long as this process
 * holds the UPS's lease. Each reading is decided (triggers/decide.ts) and persisted in one
 * transaction with its history row, its events and — when its latch makes targets due — the
 * start of the shutdown run. If the database cannot be written the loop goes on deciding in
 * memory (the on-battery clock and a latch are never lost), says so once, and writes what
 * piled up with the first reading that gets through.
 */
export class UpsLoop {
  private state: UpsMonitorState;
  /** The latch as last written, to tell an admin's release from our own change. */
  private persistedLatch: Latch | null;
  /** The first-stage latches as last written (an admin's release clears them too). */
  private persistedStages: UpsMonitorState["stages"];
  private settings: UpsLoopSettings;
  private pendingEvents: PowerEventDraft[] = [];
  private pendingHistory: HistoryPoint[] = [];
  private lastHistory: HistoryPoint | null = null;
  private databaseAway = false;
  private lastPruneAt = 0;
  /** The last failure of the trigger path other than the database being away, said once. */
  private lastFailure: string | null = null;
  private stopped = false;
  private wake: (() => void) | null = null;
  /** The monotonic time of the last reading decided by this process (null: none yet). */
  private lastDecidedMono: number | null = null;
  /** The outage (its latch's time) the console logged out of the UPS's server for; null: none. */
  private loggedOutOf: number | null = null;
  /** The monotonic time the records of the outage were last looked at (null: not yet). */
  private outageLookedAt: number | null = null;
  private readonly monotonicMs: () => number;
  readonly done: Promise<void>;

  constructor(private readonly options: UpsLoopOptions) {
    this.state = options.state;
    this.persistedLatch = options.state.latch;
    this.persistedStages = options.state.stages;
    this.settings = options.settings;
    this.monotonicMs = options.monotonicMs ?? (() => performance.now());
    this.done = this.run();
  }

  get upsId(): string {
    return this.options.ups.id;
  }

  /** The decision state as this process knows it now (also while the database is away). */
  get currentState(): UpsMonitorState {
    return this.state;
  }

  get triggers(): UpsLoopSettings["triggers"] {
    return this.settings.triggers;
  }

  configure(settings: UpsLoopSettings): void {
    this.settings = settings;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.done;
  }

  private async run(): Promise<void> {
    const { source, ups, log } = this.options;
    let reason = "stopped";
    try {
      while (!this.stopped) {
        const started = this.monotonicMs();
        const reading = await source.read();
        const readAt = this.monotonicMs();
        if (this.stopped) break;
        try {
          await this.process(reading, readAt);
        } catch (error) {
          if (error instanceof LeaseLost) {
            reason = "its lease was taken over by another worker";
            break;
          }
          throw error;
        }
        await this.keepLogin();
        await this.sleep(this.settings.pollIntervalMs - (this.monotonicMs() - started));
      }
    } catch (error) {
      reason = `failed: ${safeErrorSummary(error)}`;
      log(`UPS ${ups.name}: monitor ${reason}`);
    } finally {
      await source.close().catch(() => {});
      this.options.onEnd(reason);
    }
  }

  private sleep(ms: number): Promise<void> {
    if (ms <= 0 || this.stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.wake = null;
        resolve();
      }, ms);
      this.wake = () => {
        clearTimeout(timer);
        this.wake = null;
        resolve();
      };
    });
  }

  private decideOn(
    previous: UpsMonitorState,
    reading: UpsReading,
    elapsedMs: number,
    outageShutdownOver = false,
  ): Decision {
    return decide({
      ups: { name: this.options.ups.name },
      previous,
      reading,
      triggers: this.settings.triggers,
      stages: this.settings.stages ?? [],
      now: reading.at,
      elapsedMs,
      outageShutdownOver,
    });
  }

  /**
   * Monotonic time since the last reading this process decided. The first reading after the
   * lease was taken has none: the gap since the state was written is the only duration the
   * wall clock measures (no monotonic clock spans two processes), never negative.
   */
  private elapsedSince(readAt: number, reading: UpsReading): number {
    if (this.lastDecidedMono !== null) return Math.max(0, readAt - this.lastDecidedMono);
    const written = this.options.stateWrittenAt;
    return written ? Math.max(0, reading.at.getTime() - written.getTime()) : 0;
  }

  private async process(reading: UpsReading, readAt: number): Promise<void> {
    const { db, ownerId, ups, log } = this.options;
    const elapsedMs = this.elapsedSince(readAt, reading);
    const point = historyPoint(reading);
    const keep = keepInHistory(this.lastHistory, point);
    let decision: Decision | null = null;
    let started: StartedShutdown | null = null;
    try {
      await db.transaction(async (tx) => {
        const [row] = await tx
          .select()
          .from(upsMonitorState)
          .where(eq(upsMonitorState.upsId, ups.id))
          .for("update");
        if (!row || row.leaseOwner !== ownerId) throw new LeaseLost();
        // An admin may have released the latch (lib/power/operations/release-latch.ts): theirs wins.
        const storedState = stateOfRow(row);
        const stored = storedState.latch;
        const previous =
          sameLatch(stored, this.persistedLatch) &&
          sameStages(storedState.stages, this.persistedStages)
            ? this.state
            : { ...this.state, latch: stored, stages: storedState.stages };
        // A dormant latch that fires again starts a new outage once no shutdown run is going
        // on (triggers/decide.ts): only read when it could matter — a latch asleep and a
        // reliable reading that may fire (on battery, or FSD), not every reading on mains.
        const asleep = previous.latch?.dormant === true || hasDormantStage(previous);
        const mayFire =
          reading.kind === "reading" && (reading.onBattery || reading.forcedShutdown === true);
        decision = this.decideOn(
          previous,
          reading,
          elapsedMs,
          asleep && mayFire && !(await shutdownRunGoingOn(tx)),
        );
        await tx
          .update(upsMonitorState)
          .set({
            ...columnsOfState(decision.state),
            leaseUntil: sql`now() + make_interval(secs => ${LEASE_SECONDS})`,
            updatedAt: new Date(),
          })
          .where(eq(upsMonitorState.upsId, ups.id));
        const history = keep ? [...this.pendingHistory, point] : this.pendingHistory;
        if (history.length > 0) {
          await tx.insert(upsReadings).values(history.map((p) => ({ upsId: ups.id, ...p })));
        }
        await recordPowerEvents(
          tx,
          [...this.pendingEvents, ...decision.events].map((e) => ({ ...e, upsId: ups.id })),
        );
        if (decision.events.some((e) => e.kind === "ups.mains_back")) {
          await recordPowerEvents(tx, await mainsBackAfterFirstStage(tx, ups, previous.stages));
        }
        await notifyLive(tx, { type: "power", upsId: ups.id, eventId: null });
        // A shutdown without the database still acting for this UPS, or not recorded yet (the
        // monitor's supervisor records it): no run beside it, which would call the same targets.
        const offlineActs = this.options.offline?.holds(ups.id) === true;
        if ((decision.demandsShutdown || decision.demandsFirstStage) && !offlineActs) {
          started = await startDueShutdowns(tx, {
            id: ups.id,
            name: ups.name,
            latch: decision.demandsShutdown ? decision.state.latch : null,
            stages: decision.state.stages,
          });
        }
      });
    } catch (error) {
      if (error instanceof LeaseLost) throw error;
      // The trigger path could not write: decide in memory, keep what it should have recorded,
      // and if a shutdown is due, act on the plan held in memory (./offline-shutdown.ts).
      const unreachable = isDatabaseUnreachable(error);
      decision = this.decideOn(this.state, reading, elapsedMs);
      this.lastDecidedMono = readAt;
      this.pendingEvents = [...this.pendingEvents, ...decision.events].slice(-MAX_PENDING);
      if (keep) this.pendingHistory = [...this.pendingHistory, point].slice(-MAX_PENDING);
      if (keep) this.lastHistory = point;
      this.state = decision.state;
      const why = describeFailure(error, unreachable);
      if (!this.databaseAway) {
        this.databaseAway = true;
        log(
          `UPS ${ups.name}: could not record its reading (${safeErrorSummary(error)}); deciding in memory and trying again every poll`,
        );
      }
      if (!unreachable) await this.sayFailure(why);
      if (decision.demandsShutdown && decision.state.latch) {
        this.options.offline?.start(ups, decision.state.latch, why);
      }
      return;
    }
    const committed = decision as Decision | null;
    if (!committed) return;
    this.lastDecidedMono = readAt;
    this.lastFailure = null;
    // Said once it is committed: a transaction the database dropped started nothing.
    const run = started as StartedShutdown | null;
    if (run) {
      const latch = committed.demandsShutdown ? committed.state.latch : null;
      log(`UPS ${ups.name}: ${describeStarted(run, latch)}`);
    }
    if (this.databaseAway) {
      this.databaseAway = false;
      log(
        `UPS ${ups.name}: recording again (${this.pendingEvents.length} event(s) and ${this.pendingHistory.length} reading(s) from the gap written)`,
      );
    }
    this.state = committed.state;
    this.persistedLatch = committed.state.latch;
    this.persistedStages = committed.state.stages;
    this.pendingEvents = [];
    this.pendingHistory = [];
    if (keep) this.lastHistory = point;
    await this.prune();
  }

  /**
   * A failure of the trigger path that is not the database being away (a settings row that does
   * not parse, a bug) is a critical event, never silence — written on its own, once per kind of
   * failure, while the database answers.
   */
  private async sayFailure(why: string): Promise<void> {
    if (this.lastFailure === why) return;
    this.lastFailure = why;
    const { ups, log } = this.options;
    log(`UPS ${ups.name}: ${why}`);
    await this.options.db
      .transaction((tx) =>
        recordPowerEvents(tx, [
          {
            severity: "critical",
            kind: "monitor.failed",
            upsId: ups.id,
            message: `${ups.name}: ${why}: its readings are decided in memory only, and a shutdown that falls due is sent from the plan the worker holds in memory; look at the worker's log and fix the cause`,
          },
        ]),
      )
      .catch(() => {});
  }

  /**
   * NUT (a source with `setNeeded`): logged in to the UPS's server as a secondary while the
   * console still has something to shut down on it, logged out once every target this UPS's
   * outage made due is seen down or past its deadline (./outage-done.ts) — as a secondary upsmon
   * does once its shutdown began — so the UPS's primary upsmon waits for the console exactly as
   * long as it needs; logged in again once that outage is over: its latch released, or a new
   * outage latched. In dry-run nothing is shut down and the console never logs out.
   */
  private async keepLogin(): Promise<void> {
    const { db, source, ups, log } = this.options;
    if (!source.setNeeded) return;
    const latch = this.state.latch;
    const outage = latch?.at.getTime() ?? null;
    if (this.loggedOutOf !== null) {
      if (outage === this.loggedOutOf) return;
      await source.setNeeded(true);
      this.loggedOutOf = null;
      log(
        `UPS ${ups.name}: logged in to its NUT server again: ${outage === null ? "the outage is over" : "a new outage latched"}`,
      );
    }
    // A dormant latch (mains back) demands nothing: nothing to be done with, and no primary
    // shutting down. While the database is away the records cannot be asked: logged in.
    if (latch === null || latch.dormant || this.databaseAway) return;
    const now = this.monotonicMs();
    if (this.outageLookedAt !== null && now - this.outageLookedAt < OUTAGE_LOOK_EVERY_MS) return;
    this.outageLookedAt = now;
    let targets: OutageTarget[];
    try {
      const { mode } = await readPowerSettings(db);
      targets = await outageTargets(db, { id: ups.id, latch });
      if (!doneWithOutage(mode, targets)) return;
    } catch (error) {
      log(
        `UPS ${ups.name}: could not ask whether its outage is done (${safeErrorSummary(error)}); still logged in to its NUT server, asking again`,
      );
      return;
    }
    await source.setNeeded(false);
    this.loggedOutOf = outage;
    const what = targets.map((t) => `${t.name} ${t.seenDown ? "down" : "past its deadline"}`);
    log(
      `UPS ${ups.name}: logged out of its NUT server: the outage latched at ${latch.at.toISOString()} is done here (${what.length > 0 ? what.join(", ") : "no target on this UPS"}); its primary upsmon no longer waits for the console`,
    );
  }

  private async prune(): Promise<void> {
    if (Date.now() - this.lastPruneAt < PRUNE_EVERY_MS) return;
    this.lastPruneAt = Date.now();
    const before = new Date(Date.now() - HISTORY_DAYS * 86_400_000);
    await this.options.db
      .delete(upsReadings)
      .where(and(eq(upsReadings.upsId, this.options.ups.id), lt(upsReadings.at, before)))
      .catch(() => {});
  }
}

/**
 * `power-shutdown run … started for 2 target(s) of the trigger latched at …[, replacing …]`, or
 * `… of a consolidating cluster's first stage` when only a stage latch made them due.
 */
function describeStarted(started: StartedShutdown, latch: Latch | null): string {
  return (
    `power-shutdown run ${started.runId} started for ${started.targets} target(s)` +
    (latch
      ? ` of the trigger latched at ${latch.at.toISOString()}`
      : " of a consolidating cluster's first stage") +
    (started.replaces.length > 0 ? `, replacing lost run(s) ${started.replaces.join(", ")}` : "")
  );
}

function sameStages(a: UpsMonitorState["stages"], b: UpsMonitorState["stages"]): boolean {
  const keys = Object.keys(a);
  return (
    keys.length === Object.keys(b).length &&
    keys.every((k) => a[k]!.at.getTime() === b[k]?.at.getTime())
  );
}

function sameLatch(a: Latch | null, b: Latch | null): boolean {
  return a?.at.getTime() === b?.at.getTime() && a?.trigger === b?.trigger;
}

function hasDormantStage(state: UpsMonitorState): boolean {
  return Object.values(state.stages).some((s) => s.dormant === true);
}

/** Whether any power-shutdown run is still going (a trigger that wakes then goes on with it). */
async function shutdownRunGoingOn(tx: Pick<Database, "select">): Promise<boolean> {
  const [row] = await tx
    .select({ id: runs.id })
    .from(runs)
    .where(and(eq(runs.pipeline, POWER_SHUTDOWN), eq(runs.status, "running")))
    .limit(1);
  return row !== undefined;
}
