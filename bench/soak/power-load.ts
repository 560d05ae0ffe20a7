import { REPLACED_RUNS_PER_OUTAGE } from "@/lib/power/monitor/start-due-shutdowns";
import type { PowerConsole } from "./power-console";
import type { PowerFleet } from "./power-fleet";
import { lostRun } from "./power-judgement";
import type { PowerLoadAction, PowerLoadEvent } from "./schedule";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The monitor starts a replacement for a lost run on its next reading on battery: well within. */
const REPLACEMENT_STARTS_WITHIN_MS = 15_000;

/** One power load action as it happened: what the invariants hold the console's acts against. */
export type PowerEpisode = {
  action: PowerLoadAction;
  armed: boolean;
  /** When the soak made the UPS report low battery (a trigger it caused); null: it did not. */
  lowBatteryAt: number | null;
  /** Mains stayed off until the shutdown run ended: every target was due a call. */
  outage: boolean;
  /** Everything back: mains read, no run running, nodes powered on, the latch released. */
  endedAt: number;
  /** What the console failed to do (a trigger the soak caused and no run that ended). */
  problems: string[];
};

export type EpisodeOutcome =
  { kind: "done"; detail: string; episode: PowerEpisode } | { kind: "noTarget"; detail: string };

/**
 * Runs the part of an action that changes the power in its turn with the UPS faults. What waits
 * for the console before (it may be restarting for a minute) does not hold the UPS.
 */
export type InTurn = <T>(run: () => Promise<T>) => Promise<T>;

/**
 * The power load's actions on the lab UPS (bench/soak/schedule.ts POWER_LOAD_ACTIONS), one at a
 * time. Each first brings everything back as an operator would (mains read on the console, no
 * shutdown run running, the nodes it shut down powered on, the latch released by an admin) and
 * sets the mode through the API — never while a run is running, so a call's mode is the mode it
 * was planned in. Then:
 *
 * - outage: on battery for 1–4 s, then low battery (the UPS that dies without warning): the
 *   console latches and its shutdown run ends (armed: the nodes are off), then mains is back;
 * - mainsBackBeforeTrigger: on battery for 1–4 s (until the console reads it), mains back;
 * - mainsBackAfterTrigger: as an outage, with mains back the moment the console latched — the
 *   run may cancel before its first call or send them; the invariants hold it to what it did.
 */
export function powerLoad(fleet: PowerFleet, pc: PowerConsole, inTurn: InTurn) {
  const { control } = fleet.ups;

  /** Every node the console shut down, on again (as bench/power.ts does between flips). */
  const powerOnNodes = async () => {
    for (const { node } of fleet.targets) {
      if (node.power.state === "down") await node.power.powerOn();
      await node.power.waitUntilUp(60_000);
    }
  };

  /** Back to normal; what is still not, or null. */
  const settle = async (restorePower: boolean): Promise<string | null> => {
    const since = Date.now();
    if (restorePower) {
      control.restore();
      // A real battery takes hours to recharge from low battery, and stays LB meanwhile: the
      // next outage would trigger at once. Lab time: it is full again.
      control.set({ chargePercent: 100 });
    }
    if (!(await pc.noRunRunning())) return "a shutdown run is still running";
    await powerOnNodes();
    if (!(await pc.onMainsSince(since))) return "the console did not read the UPS on mains";
    if (!(await pc.releaseLatch())) return "the latch was not released";
    return null;
  };

  /** Low battery now; the console must latch and its run (a new one) end. */
  const trigger = async (episode: PowerEpisode, mainsBackAtLatch: boolean): Promise<string> => {
    const before = await pc.latestRun();
    episode.lowBatteryAt = Date.now();
    control.jumpToLowBattery();
    const latched = await pc.latched();
    if (mainsBackAtLatch) control.restore();
    if (!latched) {
      episode.problems.push("low battery: the console did not latch a trigger");
      return "not latched";
    }
    const first = await pc.newRunEnded(before?.id);
    if (!first) {
      episode.problems.push("latched, but no new shutdown run ended");
      return "latched, no run ended";
    }
    let run = first;
    const ended = [run];
    // A run the console lost is replaced by the monitor while the trigger holds: mains stays off
    // (as the battery would) until the replacement has ended too.
    while (!mainsBackAtLatch && lostRun(run) && ended.length <= REPLACED_RUNS_PER_OUTAGE) {
      const lostId = run.id;
      const replaced = await pc.until(async () => {
        const latest = await pc.latestRun();
        return Boolean(latest && latest.id !== lostId);
      }, REPLACEMENT_STARTS_WITHIN_MS);
      const next = replaced ? await pc.newRunEnded(lostId) : null;
      if (!next) break;
      ended.push((run = next));
    }
    return ended
      .map((r) => `run ${r.id} ${r.status}${r.failureReason ? ` (${r.failureReason})` : ""}`)
      .join("; replaced by ");
  };

  /** The action proper, in its turn: UPS faults leave mains on and nothing latched. */
  const act = async (event: PowerLoadEvent, armed: boolean): Promise<EpisodeOutcome> => {
    const episode: PowerEpisode = {
      action: event.action,
      armed,
      lowBatteryAt: null,
      outage: event.action.startsWith("outage."),
      endedAt: 0,
      problems: [],
    };
    control.pullPlug();
    await sleep(1000 + event.pick * 3000);
    let detail: string;
    if (event.action.startsWith("mainsBackBeforeTrigger.")) {
      const seen = await pc.until(
        async () => (await pc.card())?.condition === "on-battery",
        10_000,
      );
      control.restore();
      detail = seen ? "on battery, mains back before a trigger" : "mains back (on battery unseen)";
    } else {
      detail = await trigger(episode, event.action.startsWith("mainsBackAfterTrigger."));
    }
    const unsettled = await settle(true);
    episode.endedAt = Date.now();
    if (unsettled) episode.problems.push(`afterwards: ${unsettled}`);
    return { kind: "done", detail: `${armed ? "armed" : "dry-run"}: ${detail}`, episode };
  };

  /**
   * One action after another; each first waits until the console is back to normal (a UPS fault
   * under way keeps its turn meanwhile: the power is left as it has it), sets the mode, then
   * takes its turn with the UPS.
   */
  const episode = async (event: PowerLoadEvent, over: () => boolean): Promise<EpisodeOutcome> => {
    if (over()) return { kind: "noTarget", detail: "the soak was over first" };
    const armed = event.action.endsWith(".armed");
    const unready = await settle(false);
    if (unready) return { kind: "noTarget", detail: `not started: ${unready}` };
    const modeProblem = await pc.setMode(armed ? "armed" : "dry-run");
    if (modeProblem) return { kind: "noTarget", detail: `not started: ${modeProblem}` };
    return inTurn(() =>
      over()
        ? Promise.resolve<EpisodeOutcome>({ kind: "noTarget", detail: "the soak was over first" })
        : act(event, armed),
    );
  };
  let previous: Promise<unknown> = Promise.resolve();
  return (event: PowerLoadEvent, over: () => boolean): Promise<EpisodeOutcome> => {
    const next = previous.then(() => episode(event, over));
    previous = next.catch(() => {});
    return next;
  };
}
