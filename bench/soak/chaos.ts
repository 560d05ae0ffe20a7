import { createFaults, type DurabilityReport, type Recovery } from "./faults";
import { FAULTS, type ChaosEvent, type Fault } from "./schedule";
import type { SoakContext } from "./soak-context";

export type FaultCount = { injected: number; skipped: number; reasons: Set<string> };

/**
 * Injects the scheduled faults at their moments, each on its own (a fault that waits for the
 * database to come back does not hold up the next one). `stop` cancels what has not started and
 * waits for what is under way to be over: every switch off again, the database back.
 */
export function startChaos(ctx: SoakContext, events: readonly ChaosEvent[]) {
  const durability: DurabilityReport = { checked: 0, problems: [] };
  let over = false;
  const faults = createFaults(ctx, durability, () => over);
  const counts = new Map<Fault, FaultCount>(
    FAULTS.map((fault) => [fault, { injected: 0, skipped: 0, reasons: new Set<string>() }]),
  );
  const recoveries: Recovery[] = [];
  let lastOverAt = ctx.startedAt;
  const underWay = new Set<Promise<void>>();
  const timers = events.map((event) =>
    setTimeout(
      () => {
        const done = inject(event).finally(() => underWay.delete(done));
        underWay.add(done);
      },
      Math.max(0, ctx.startedAt + event.atMs - Date.now()),
    ),
  );

  async function inject(event: ChaosEvent) {
    const count = counts.get(event.fault)!;
    try {
      const outcome = await faults[event.fault](event);
      if (outcome.injected) {
        count.injected += 1;
        lastOverAt = Math.max(lastOverAt, outcome.overAt);
        if (outcome.recovery) recoveries.push(outcome.recovery);
        ctx.log(`chaos ${event.fault}: ${outcome.detail}`);
      } else {
        count.skipped += 1;
        count.reasons.add(outcome.reason);
        ctx.log(`chaos ${event.fault}: not injected (${outcome.reason})`);
      }
    } catch (error) {
      // The soak's own trouble (a lab switch refused): reported, never taken for the console's.
      count.skipped += 1;
      count.reasons.add(`the soak could not inject it: ${(error as Error).message}`);
      ctx.log(`chaos ${event.fault}: FAILED to inject: ${(error as Error).message}`);
    }
  }

  return {
    counts,
    durability,
    recoveries,
    /** When the latest fault so far was over (healed, restarted, back up). */
    lastOverAt: () => lastOverAt,
    async stop() {
      over = true;
      for (const timer of timers) clearTimeout(timer);
      while (underWay.size > 0) await Promise.all([...underWay]);
      // Whatever is left switched on (nothing, unless a heal failed): every node as started.
      await Promise.all(ctx.boards.map((board) => board.clear()));
      for (const { node } of ctx.nodes) {
        if (node.power.state === "down") await node.switches.run("reboot.powerOn");
      }
      lastOverAt = Math.max(lastOverAt, Date.now());
    },
  };
}
