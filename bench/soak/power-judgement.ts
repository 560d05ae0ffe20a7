import { ABORT_REASON } from "@/lib/pipeline/abort-reason";
import { REPLACED_RUNS_PER_OUTAGE } from "@/lib/power/monitor/start-due-shutdowns";
import { SHUTDOWN_CANCELLED } from "@/lib/power/shutdown/shut-down-targets";
import type { Verdict } from "./invariants";
import type { PowerEpisode } from "./power-load";

/** A run the console lost: failed, but neither by an operator's abort nor cancelled by mains back. */
export const lostRun = (run: { status: string; failureReason: string | null }) =>
  run.status === "failed" &&
  run.failureReason !== ABORT_REASON &&
  run.failureReason !== SHUTDOWN_CANCELLED;

/** A power-shutdown run as the invariants read it. */
export type PowerRun = {
  id: string;
  createdAt: number;
  status: string;
  failureReason: string | null;
  /** The trigger's latch it was started for (its outage); null for a run without one. */
  latchedAt: string | null;
  /** The lost runs of the same outage it took over from (the monitor's `replaces`). */
  replaces: string[];
};

/** What the power invariants judge, as times in ms; read by bench/soak/power-invariants.ts. */
export type PowerRecord = {
  /** The console's mode history: its `mode.armed` / `mode.disarmed` power events, in order. */
  modes: { at: number; kind: string }[];
  /** power_shutdown_calls, with the creation time of their run. */
  calls: { targetId: string; state: string; runCreatedAt: number }[];
  /** Every power-shutdown run. */
  runs: PowerRun[];
  /** Every `POST /nodes/{node}/status command=shutdown` that reached a lab node. */
  requests: ShutdownRequest[];
  targets: { id: string; node: string }[];
  episodes: readonly PowerEpisode[];
  /** UPS faults injected (none may start a run). */
  faultsInjected: number;
};

export type ShutdownRequest = { node: string; at: number };

const list = (items: readonly string[], max = 5) =>
  items.slice(0, max).join("; ") + (items.length > max ? `; … ${items.length - max} more` : "");
const within = (at: number, from: number, to: number) => at >= from && at <= to;

/**
 * The power invariants: no call reached a lab node while dry-run; armed, exactly one call per
 * target per outage (at most one claimed and one arrived per low battery, the lab's log agreeing
 * with power_shutdown_calls, exactly one when mains stayed off); no run without a low battery
 * the soak caused; every low battery it caused latched and its run ended.
 */
export function judgePower(record: PowerRecord, since: (at: number) => string): Verdict[] {
  const armedAt = (at: number) => {
    let armed = false;
    for (const m of modes) if (m.at <= at) armed = m.kind === "mode.armed";
    return armed;
  };
  const { modes, calls, runs, requests, targets, episodes, faultsInjected } = record;
  const targetNodes = new Set(targets.map((t) => t.node));
  const whileDryRun = requests.filter((r) => !armedAt(r.at));
  const notTargets = requests.filter((r) => !targetNodes.has(r.node));
  const wouldSend = calls.filter((c) => c.state === "would_send").length;

  // Armed: per outage the soak caused, per target — the rows claimed and the calls that arrived.
  const triggered = episodes.filter((e) => e.lowBatteryAt !== null);
  const armedProblems: string[] = [];
  let armedOutages = 0;
  const explained = new Set<ShutdownRequest>();
  for (const episode of triggered.filter((e) => e.armed)) {
    const from = episode.lowBatteryAt!;
    if (episode.outage) armedOutages += 1;
    for (const target of targets) {
      const name = target.node;
      const arrived = requests.filter(
        (r) => r.node === name && within(r.at, from, episode.endedAt),
      );
      for (const r of arrived) explained.add(r);
      const claimed = calls.filter(
        (c) =>
          c.targetId === target.id &&
          c.state !== "would_send" &&
          within(c.runCreatedAt, from, episode.endedAt),
      );
      const where = `${episode.action} at ${since(from)}, ${name}`;
      const states = claimed.map((c) => c.state).join(", ") || "none";
      if (claimed.length > 1)
        armedProblems.push(`${where}: ${claimed.length} calls claimed (${states})`);
      if (arrived.length > 1) armedProblems.push(`${where}: ${arrived.length} calls arrived`);
      const sent = claimed.filter((c) => c.state === "sent").length;
      const maybe = claimed.filter((c) => c.state === "unknown" || c.state === "failed").length;
      if (arrived.length < sent || arrived.length > sent + maybe) {
        armedProblems.push(`${where}: claimed ${states}, but ${arrived.length} arrived`);
      }
      if (
        episode.outage &&
        (claimed.length !== 1 || (arrived.length !== 1 && states !== "unknown"))
      ) {
        armedProblems.push(`${where}: an outage, claimed ${states}, ${arrived.length} arrived`);
      }
    }
  }
  const unexplained = requests.filter((r) => !explained.has(r));

  const surplus = surplusRuns(runs);
  const replacements = runs.filter((r) => r.replaces.length > 0).length;

  const inWindow = (at: number) => triggered.some((e) => within(at, e.lowBatteryAt!, e.endedAt));
  const uncaused = runs.filter((r) => !inWindow(r.createdAt));
  const unacted = episodes.flatMap((e) =>
    e.problems.map((p) => `${e.action} at ${since(e.lowBatteryAt ?? e.endedAt)}: ${p}`),
  );
  const dryOutagesShort = triggered
    .filter((e) => !e.armed && e.outage)
    .flatMap((e) =>
      targets
        .filter(
          (t) =>
            !calls.some(
              (c) =>
                c.targetId === t.id &&
                c.state === "would_send" &&
                within(c.runCreatedAt, e.lowBatteryAt!, e.endedAt),
            ),
        )
        .map((t) => `${e.action} at ${since(e.lowBatteryAt!)}: no would-send for ${t.node}`),
    );

  return [
    {
      invariant: "(power) no shutdown call reached a lab node while dry-run",
      held: whileDryRun.length === 0 && notTargets.length === 0,
      detail:
        whileDryRun.length + notTargets.length > 0
          ? list([
              ...whileDryRun.map((r) => `${r.node} at ${since(r.at)} while dry-run`),
              ...notTargets.map((r) => `${r.node} (not a target) at ${since(r.at)}`),
            ])
          : `${requests.length} calls reached lab nodes, each while armed; ${wouldSend} would-send in dry-run; ${modes.length} mode changes`,
    },
    {
      invariant: "(power) armed: exactly one shutdown call per target per outage",
      held: armedProblems.length === 0 && unexplained.length === 0,
      detail:
        armedProblems.length + unexplained.length > 0
          ? list([
              ...armedProblems,
              ...unexplained.map((r) => `${r.node} at ${since(r.at)}: no outage caused it`),
            ])
          : `${armedOutages} armed outages and ${triggered.filter((e) => e.armed).length - armedOutages} with mains back at the latch, ${targets.length} targets: power_shutdown_calls and the lab's logs agree`,
    },
    {
      invariant: "(power) no shutdown run without a low battery the soak caused",
      held: uncaused.length === 0,
      detail: uncaused.length
        ? list(uncaused.map((r) => `run ${r.id} at ${since(r.createdAt)}`))
        : `${runs.length} runs, each after one; ${faultsInjected} UPS faults and ${episodes.length - triggered.length} blips started none`,
    },
    {
      invariant: "(power) one shutdown run per outage, more only to replace a lost one",
      held: surplus.length === 0,
      detail: surplus.length
        ? list(surplus)
        : `${runs.length - replacements} outages' runs, ${replacements} replacing a lost one`,
    },
    {
      invariant: "(power) every low battery the soak caused latched and its run ended",
      held: unacted.length === 0 && dryOutagesShort.length === 0,
      detail:
        unacted.length + dryOutagesShort.length > 0
          ? list([...unacted, ...dryOutagesShort])
          : `${triggered.length} low batteries, ${triggered.filter((e) => !e.armed && e.outage).length} dry-run outages with a would-send per target`,
    },
  ];
}

/**
 * Runs that should not exist: per trigger latch (one outage) one run, and beyond it only runs
 * that replace lost runs of the same outage — each naming runs that had been lost before it
 * started, at most REPLACED_RUNS_PER_OUTAGE of them (lib/power/monitor/start-due-shutdowns.ts).
 * (The soak never fails mains again within one latch, so a second first run has no excuse.)
 */
export function surplusRuns(runs: readonly PowerRun[]): string[] {
  const byId = new Map(runs.map((r) => [r.id, r]));
  const problems: string[] = [];
  const outages = new Map<string, PowerRun[]>();
  for (const run of runs) {
    const key = run.latchedAt ?? `run ${run.id}`;
    outages.set(key, [...(outages.get(key) ?? []), run]);
  }
  for (const [latchedAt, outage] of outages) {
    const firsts = outage.filter((r) => r.replaces.length === 0);
    if (firsts.length > 1) {
      problems.push(
        `${firsts.length} runs for the trigger latched at ${latchedAt}, none replacing another: ${firsts.map((r) => r.id).join(", ")}`,
      );
    }
    const replacing = outage.filter((r) => r.replaces.length > 0);
    if (replacing.length > REPLACED_RUNS_PER_OUTAGE) {
      problems.push(
        `${replacing.length} replacements for the trigger latched at ${latchedAt} (at most ${REPLACED_RUNS_PER_OUTAGE})`,
      );
    }
    for (const run of replacing) {
      for (const id of run.replaces) {
        const replaced = byId.get(id);
        if (
          !replaced ||
          replaced.latchedAt !== run.latchedAt ||
          replaced.createdAt > run.createdAt
        ) {
          problems.push(`run ${run.id} replaces ${id}, not an earlier run of its outage`);
        } else if (!lostRun(replaced)) {
          problems.push(
            `run ${run.id} replaces ${id}, which was not lost (${replaced.status}${replaced.failureReason ? `: ${replaced.failureReason}` : ""})`,
          );
        }
      }
    }
  }
  return problems;
}
