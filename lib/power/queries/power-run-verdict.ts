import { z } from "zod";
import { OUTPUT_CYCLE_LABEL } from "@/lib/power/records/run-actions";

/*
 * What a power-shutdown run did, in words an operator reads at 3 a.m. — decided from what the run
 * recorded (its frozen plan and context, its calls with `seen_down_at`, its actions), never from
 * the engine's "the step advanced". Pure, so every case is tested (power-run-verdict.test.ts).
 *
 * A step that advanced without doing anything (no cluster in the run, dry-run, nothing sent) is
 * "skipped", with why; a step that only recorded what it would do is "dry-run"; only a step that
 * did what it is named for stays "done". VerifyTargetsDown is done only when targets were seen
 * down (it advances on nothing else once something was sent).
 */

export type PowerRunTone =
  | "running"
  | "ok"
  | "dry-run"
  | "failed"
  | "cancelled"
  | "aborted"
  /** A way back a new outage stopped (./power-back-verdict.ts). */
  | "stopped";

/** The run's one line: what happened, or is happening. */
export type PowerRunVerdict = { tone: PowerRunTone; text: string };

/** How a step that the engine calls done reads, when it did less than its name says. */
export type PowerStepVerdict = { state: "skipped" | "dry-run"; note: string };

export type PowerRunFacts = {
  status: "running" | "succeeded" | "failed";
  failureReason: string | null;
  failedStep: string | null;
  currentStep: string;
  /** The run's context (plan, input, dropped, …) as stored; read leniently. */
  context: Record<string, unknown>;
  /** Every attempt of every call of this run. */
  calls: readonly {
    targetId: string;
    state: "would_send" | "sending" | "sent" | "failed" | "unknown";
    seenDownAt: string | null;
  }[];
  actions: readonly {
    lane: string;
    outcome: string | null;
    label?: string;
    detail?: string | null;
  }[];
};

export const CANCELLED_REASON = "mains back before anything was sent: shutdown cancelled";
const ABORT_REASON = "aborted by operator";
const CLUSTER_LANE = "cluster";

const ZPlan = z.object({
  mode: z.enum(["armed", "dry-run"]),
  targets: z.array(
    z.object({
      id: z.string(),
      name: z.string(),
      cluster: z.string().nullish(),
      afterClusters: z.boolean().optional(),
    }),
  ),
  clusters: z
    .array(
      z.object({
        clusterId: z.string(),
        name: z.string(),
        hyperConverged: z.boolean().optional(),
        nodes: z.array(z.object({ targetId: z.string().nullable() })),
        consolidate: z
          .object({ stage: z.string(), mode: z.string() })
          .nullish()
          .transform((c) => c ?? null),
        partial: z
          .object({ staying: z.array(z.string()) })
          .nullish()
          .transform((p) => p ?? null),
      }),
    )
    .optional()
    .default([]),
});
type Plan = z.infer<typeof ZPlan>;

const ZIds = z.array(z.string()).catch([]);
const ZFallback = z.record(z.string(), z.string()).catch({});

type Read = {
  plan: Plan | null;
  /** Targets the run no longer covers: mains back (dropped, spared) or handed back. */
  left: Set<string>;
  droppedNames: string[];
  handedBackNames: string[];
  fellBack: Record<string, string>;
  cancelled: boolean;
};

function read(facts: PowerRunFacts): Read {
  const parsed = ZPlan.safeParse(facts.context.plan);
  const plan = parsed.success ? parsed.data : null;
  const dropped = ZIds.parse(facts.context.dropped ?? []);
  const handedBack = ZIds.parse(facts.context.handedBack ?? []);
  const nameOf = (id: string) => plan?.targets.find((t) => t.id === id)?.name ?? id;
  return {
    plan,
    left: new Set([...dropped, ...handedBack]),
    droppedNames: dropped.map(nameOf),
    handedBackNames: handedBack.map(nameOf),
    fellBack: ZFallback.parse(facts.context["cluster:fallback"] ?? {}),
    cancelled:
      facts.status === "failed" &&
      (facts.context.outcome === "cancelled" || facts.failureReason === CANCELLED_REASON),
  };
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
const isReal = (state: PowerRunFacts["calls"][number]["state"]) => state !== "would_send";

function firstLine(text: string | null): string {
  return (
    (text ?? "")
      .split("\n")
      .find((line) => line.trim() !== "")
      ?.trim() ?? ""
  );
}

/** Targets the run still covers, and which of them were seen down (by any of their attempts). */
function coverage(facts: PowerRunFacts, r: Read) {
  const covered = (r.plan?.targets ?? []).filter((t) => !r.left.has(t.id));
  const down = covered.filter((t) =>
    facts.calls.some((c) => c.targetId === t.id && c.seenDownAt !== null),
  );
  const called = covered.filter((t) =>
    facts.calls.some((c) => c.targetId === t.id && isReal(c.state)),
  );
  return { covered, down, called };
}

/**
 * The UPS output cycle's part of the run's line (lib/power/shutdown/cycle-ups-output.ts), or ""
 * when the run had none (the setting off, or the run ended before it).
 */
function cycleText(facts: PowerRunFacts): string {
  const cycle = facts.actions.find((a) => a.label?.startsWith(OUTPUT_CYCLE_LABEL));
  if (!cycle) return "";
  const ups = cycle.lane;
  switch (cycle.outcome) {
    case "ok":
      return `; ${ups} asked to cycle its output (upsd accepted)`;
    case "would-do":
      return `; would ask ${ups} to cycle its output`;
    case "failed":
      return `; output cycle of ${ups} ${cycle.detail?.startsWith("not sent:") ? "not sent" : "failed"}`;
    case null:
      return `; output cycle of ${ups} in flight`;
    default:
      return `; output cycle of ${ups}: outcome unknown`;
  }
}

function wouldDoText(facts: PowerRunFacts): string {
  const wouldDo = facts.actions.filter(
    (a) => a.outcome === "would-do" && !a.label?.startsWith(OUTPUT_CYCLE_LABEL),
  );
  const calls = facts.calls.filter((c) => c.state === "would_send").length;
  const clusterActions = wouldDo.filter((a) => a.lane === CLUSTER_LANE).length;
  if (wouldDo.length === 0 && calls === 0) return "nothing would have been sent";
  if (clusterActions === 0)
    return `${plural(Math.max(calls, wouldDo.length), "call")} would have been sent, nothing sent`;
  return `${plural(wouldDo.length, "action")} would have been taken (${plural(calls, "shutdown call")}, ${plural(clusterActions, "cluster action")}), nothing sent`;
}

/** The run's one line, e.g. "2 of 2 hosts confirmed down" or "dry-run: 2 calls would have been sent, nothing sent". */
export function describePowerRun(facts: PowerRunFacts): PowerRunVerdict {
  const r = read(facts);
  const dry = r.plan?.mode === "dry-run";
  const { covered, down, called } = coverage(facts, r);
  const spared =
    r.droppedNames.length > 0 ? `; ${r.droppedNames.join(", ")} spared (mains back)` : "";
  const handedBack =
    r.handedBackNames.length > 0
      ? `; ${r.handedBackNames.join(", ")} left for the final threshold`
      : "";
  const step = facts.failedStep ?? facts.currentStep;

  if (facts.status === "running") {
    if (dry || !r.plan) {
      return {
        tone: dry ? "dry-run" : "running",
        text: dry ? "dry-run in progress: nothing is sent" : "planning the shutdown",
      };
    }
    return {
      tone: "running",
      text: `shutting down: ${down.length} of ${plural(covered.length, "host")} confirmed down so far${spared}`,
    };
  }
  if (facts.status === "failed" && facts.failureReason === ABORT_REASON) {
    const what = dry
      ? "dry-run, nothing sent"
      : called.length === 0
        ? "no call had been sent"
        : `${plural(called.length, "host")} called, ${down.length} confirmed down`;
    return { tone: "aborted", text: `aborted during ${step}: ${what}` };
  }
  if (r.cancelled) {
    return { tone: "cancelled", text: "cancelled: mains back before any call — nothing sent" };
  }
  if (facts.status === "failed") {
    if (facts.failedStep === "VerifyTargetsDown" && !dry) {
      const up = called.filter((t) => !down.includes(t));
      if (up.length > 0) {
        const names = up.map((t) => t.name).join(", ");
        return {
          tone: "failed",
          text: `failed: ${names} still ${up.length === 1 ? "answers" : "answer"} after ${up.length === 1 ? "its" : "their"} deadline; ${down.length} of ${plural(covered.length, "host")} confirmed down`,
        };
      }
    }
    const reason = firstLine(facts.failureReason) || "no reason recorded";
    return {
      tone: "failed",
      text: `${dry ? "dry-run " : ""}failed at ${step}: ${reason}`,
    };
  }
  // Succeeded.
  if (!r.plan) return { tone: "failed", text: "finished without a readable plan" };
  if (dry) return { tone: "dry-run", text: `dry-run: ${wouldDoText(facts)}${cycleText(facts)}` };
  if (covered.length === 0) {
    return {
      tone: "cancelled",
      text: `nothing shut down${spared}${handedBack}`.replace("down; ", "down: "),
    };
  }
  const all = down.length === covered.length;
  return {
    tone: all ? "ok" : "failed",
    text: `${down.length} of ${plural(covered.length, "host")} confirmed down${spared}${handedBack}${cycleText(facts)}`,
  };
}

/**
 * Steps the engine records as done that did not do what their name says: skipped (with why) or
 * dry-run (recorded what they would do). Steps not listed read as the engine says.
 */
export function powerStepVerdicts(
  facts: PowerRunFacts,
  steps: readonly { name: string; state: string }[],
): Record<string, PowerStepVerdict> {
  const r = read(facts);
  const plan = r.plan;
  if (!plan) return {};
  const dry = plan.mode === "dry-run";
  const clusters = plan.clusters
    .map((c) => ({ ...c, nodes: c.nodes.filter((n) => !n.targetId || !r.left.has(n.targetId)) }))
    .filter((c) => c.nodes.some((n) => n.targetId));
  const prepared = clusters.filter((c) => !r.fellBack[c.clusterId]);
  const noCluster =
    plan.clusters.length === 0
      ? "no cluster"
      : clusters.length === 0
        ? "no cluster left (mains back)"
        : "every cluster fell back to node-by-node shutdown";
  const standalone = plan.targets.filter(
    (t) => !t.cluster && !t.afterClusters && !r.left.has(t.id),
  );
  const clusterNodes = plan.targets.filter(
    (t) => (t.cluster || t.afterClusters) && !r.left.has(t.id),
  );
  const firstStage = prepared.filter((c) => c.consolidate?.stage === "first");
  const migrating = firstStage.filter((c) => c.consolidate?.mode === "migrate");
  const realCalls = facts.calls.filter((c) => isReal(c.state));
  const seenDown = facts.calls.some((c) => c.seenDownAt !== null);

  /** Why the step had nothing to do, or null when it had something. */
  const scope: Record<string, () => string | null> = {
    ShutDownTargets: () =>
      standalone.length > 0
        ? null
        : plan.clusters.length > 0
          ? "every target goes down with its cluster"
          : "no target left (mains back)",
    CheckConsolidation: () => (firstStage.length > 0 ? null : "no consolidation"),
    DisarmHa: () =>
      prepared.some((c) => !c.partial)
        ? null
        : prepared.length > 0
          ? "partial outage: HA stays armed for the nodes that keep power"
          : noCluster,
    MigrateGuests: () => (migrating.length > 0 ? null : "no migration"),
    StopClusterGuests: () =>
      prepared.some((c) => !migrating.includes(c))
        ? null
        : prepared.length > 0
          ? "guests migrated instead"
          : noCluster,
    SetCephFlags: () =>
      prepared.some((c) => c.hyperConverged) ? null : prepared.length > 0 ? "no Ceph" : noCluster,
    ShutDownClusterNodes: () =>
      clusterNodes.length > 0 ? null : plan.clusters.length === 0 ? "no cluster" : noCluster,
    VerifyTargetsDown: () =>
      dry ? "dry-run" : realCalls.length === 0 && !seenDown ? "nothing was sent" : null,
    // Done only when upsd took the command; refused or failed reads as not done, with why.
    CycleUpsOutput: () => {
      const cycle = facts.actions.find((a) => a.label?.startsWith(OUTPUT_CYCLE_LABEL));
      if (!cycle) return "the UPS's output cycle is off";
      if (cycle.outcome === "ok") return null;
      if (cycle.outcome === "would-do") return dry ? null : (cycle.detail ?? "would send");
      return `not done: ${cycle.detail ?? cycle.outcome ?? "in flight"}`;
    },
  };

  const wouldSendTo = (targets: readonly { id: string }[]) => () =>
    facts.calls.filter((c) => c.state === "would_send" && targets.some((t) => t.id === c.targetId))
      .length;
  const wouldSend: Record<string, () => number> = {
    ShutDownTargets: wouldSendTo(standalone),
    ShutDownClusterNodes: wouldSendTo(clusterNodes),
  };

  const verdicts: Record<string, PowerStepVerdict> = {};
  for (const step of steps) {
    if (step.state !== "done") continue;
    const why = scope[step.name]?.();
    if (why === undefined) continue; // PlanShutdown, and steps this version does not know
    if (why !== null) {
      verdicts[step.name] = { state: "skipped", note: `skipped — ${why}` };
    } else if (dry) {
      verdicts[step.name] = {
        state: "dry-run",
        note: wouldSend[step.name]
          ? `dry-run — ${plural(wouldSend[step.name]!(), "call")} would have been sent, nothing sent`
          : "dry-run — recorded what it would do, nothing sent",
      };
    }
  }
  return verdicts;
}
