import type { FaultCount } from "./chaos";
import type { FaultOutcome } from "./faults";
import type { ActionCount } from "./load";
import { powerConsole } from "./power-console";
import { powerFaults } from "./power-faults";
import type { PowerFleet } from "./power-fleet";
import { powerLoad, type EpisodeOutcome, type PowerEpisode } from "./power-load";
import {
  POWER_FAULTS,
  POWER_LOAD_ACTIONS,
  type PowerFault,
  type PowerFaultEvent,
  type PowerLoadAction,
  type PowerLoadEvent,
} from "./schedule";
import type { SoakContext } from "./soak-context";

/**
 * Runs the power load and the power faults at their scheduled moments. Whatever changes the
 * UPS's power (an outage, mains flapping, a stale-counter outage) takes its turn: one at a time,
 * so each outage the invariants judge is the one the soak meant. An unreachable UPS overlaps.
 */
export function startPower(
  ctx: SoakContext,
  fleet: PowerFleet,
  schedule: { powerFaults: readonly PowerFaultEvent[]; powerLoad: readonly PowerLoadEvent[] },
) {
  let faultsOver = false;
  let loadOver = false;
  let turn: Promise<unknown> = Promise.resolve();
  const inTurn = <T>(run: () => Promise<T>): Promise<T> => {
    const next = turn.then(run);
    turn = next.catch(() => {});
    return next;
  };
  const faults = powerFaults(fleet, (fault) =>
    inTurn(() =>
      faultsOver
        ? Promise.resolve<FaultOutcome>({ injected: false, reason: "the chaos was over first" })
        : fault(),
    ),
  );
  const episode = powerLoad(fleet, powerConsole(ctx, fleet), inTurn);

  const faultCounts = new Map<PowerFault, FaultCount>(
    POWER_FAULTS.map((f) => [f, { injected: 0, skipped: 0, reasons: new Set<string>() }]),
  );
  const loadCounts = new Map<PowerLoadAction, ActionCount>(
    POWER_LOAD_ACTIONS.map((a) => [
      a,
      { done: 0, refused: 0, unavailable: 0, unanswered: 0, noTarget: 0 },
    ]),
  );
  const episodes: PowerEpisode[] = [];
  let lastOverAt = ctx.startedAt;

  async function inject(event: PowerFaultEvent) {
    const count = faultCounts.get(event.fault)!;
    try {
      const outcome = await faults[event.fault](event);
      if (outcome.injected) {
        count.injected += 1;
        lastOverAt = Math.max(lastOverAt, outcome.overAt);
        ctx.log(`chaos ${event.fault}: ${outcome.detail}`);
      } else {
        count.skipped += 1;
        count.reasons.add(outcome.reason);
        ctx.log(`chaos ${event.fault}: not injected (${outcome.reason})`);
      }
    } catch (error) {
      count.skipped += 1;
      count.reasons.add(`the soak could not inject it: ${(error as Error).message}`);
      ctx.log(`chaos ${event.fault}: FAILED to inject: ${(error as Error).message}`);
    }
  }

  async function act(event: PowerLoadEvent) {
    const count = loadCounts.get(event.action)!;
    let outcome: EpisodeOutcome | { kind: "unanswered"; detail: string };
    try {
      outcome = await episode(event, () => loadOver);
    } catch (error) {
      outcome = { kind: "unanswered", detail: `the soak failed: ${(error as Error).message}` };
    }
    count[outcome.kind] += 1;
    if (outcome.kind === "done") episodes.push(outcome.episode);
    ctx.log(`load power.${event.action}: ${outcome.detail}`);
  }

  const underWay = new Set<Promise<void>>();
  const atTheirMoments = <E extends { atMs: number }>(
    events: readonly E[],
    run: (e: E) => Promise<void>,
  ) =>
    events.map((event) =>
      setTimeout(
        () => {
          const done = run(event).finally(() => underWay.delete(done));
          underWay.add(done);
        },
        Math.max(0, ctx.startedAt + event.atMs - Date.now()),
      ),
    );
  const faultTimers = atTheirMoments(schedule.powerFaults, inject);
  const loadTimers = atTheirMoments(schedule.powerLoad, act);

  return {
    faultCounts,
    loadCounts,
    episodes,
    /** When the latest power fault was over. */
    lastOverAt: () => lastOverAt,
    /** The chaos is over: no power fault starts any more. */
    stopFaults() {
      faultsOver = true;
      for (const timer of faultTimers) clearTimeout(timer);
    },
    /** The soak is over: nothing starts any more, and what is under way ends. */
    async stop() {
      faultsOver = true;
      loadOver = true;
      for (const timer of [...faultTimers, ...loadTimers]) clearTimeout(timer);
      while (underWay.size > 0) await Promise.all([...underWay]);
    },
  };
}
