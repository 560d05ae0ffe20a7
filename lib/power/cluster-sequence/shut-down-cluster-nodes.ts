import { advance, poll, type Step } from "@/lib/pipeline/step";
import { finishAction, startAction } from "@/lib/power/records/run-actions";
import {
  attemptDue,
  attemptShutdown,
  laneOf,
  outageCalls,
  recordSeenDown,
  standingOf,
} from "@/lib/power/shutdown/call-attempts";
import type { PlannedTarget } from "@/lib/power/shutdown/shutdown-plan";
import type { PowerServices } from "@/lib/power/shutdown/services";
import { listGuestsBefore } from "@/lib/power/shutdown/guests-before";
import {
  sendDueRetries,
  spareNotBegun,
  unreachable,
  wouldCall,
} from "@/lib/power/shutdown/shut-down-targets";
import { probeTarget } from "@/lib/power/targets/shutdown-call";
import { watchWithinVisit } from "./watch";
import { clusterStepRun, report, type Ctx, type SequenceRun } from "./sequence-context";

/**
 * Two silent probes this far apart before a node counts as no longer answering: one refused
 * connection may be pveproxy restarting, not the node going down.
 */
const SILENT_CONFIRM_MS = 500;
const PROBE_TIMEOUT_MS = 2000;
/**
 * A node that should go down is asked this often, within the visit: one TLS connect each, and
 * every moment it is seen later is battery the next node does not get.
 */
const PROBE_INTERVAL_MS = 100;
/** How often a node whose call failed is looked at for its next attempt (a query each). */
const RETRY_CHECK_MS = 500;

type NodeWatch = {
  /** Its first attempt (or, called by another run, when this run began to watch it). */
  sentAt?: string;
  /** Its call was accepted: nothing more is sent, only watched. */
  accepted?: boolean;
  silentSince?: string;
  /** Why the probe says it no longer answers (refused, cut, silent). */
  why?: string;
  downActionId?: number;
  done?: "down" | "still-up" | "not-sent" | "would-do" | "spared";
};
type NodesState = Record<string, NodeWatch>;

/**
 * Last step of the cluster sequences: the nodes of every cluster one after another in the
 * planned order (no Ceph monitor, then monitors, the console's node last, across all clusters:
 * lib/power/shutdown/shutdown-plan.ts), each shutdown sent to the node's own API
 * address through the same claim as standalone targets (at most one accepted call per target per
 * outage). A call that fails or goes unanswered is sent again with backoff while the node is
 * watched; the next node waits until the previous one stopped answering or its time to go down
 * is over. Standalone targets whose call failed are sent again beside the watch. A standalone
 * console host held back behind the clusters goes last.
 */
export const shutDownClusterNodes: Step<PowerServices> = {
  name: "ShutDownClusterNodes",
  maxDuration: () => 7200,
  async visit(ctx) {
    const ready = await clusterStepRun<NodesState, PlannedTarget>(ctx, {
      stateKey: "cluster:nodes",
      none: "no cluster node in this run",
      select: (run) => {
        // The plan's order across every cluster (plan.targets is in it), not cluster by cluster.
        const ids = new Set(run.clusters.flatMap((c) => c.nodes.map((n) => n.targetId)));
        return [
          ...run.plan.targets.filter((t) => ids.has(t.id)),
          ...run.plan.targets.filter((t) => t.afterClusters && !dropped(ctx).has(t.id)),
        ];
      },
    });
    if (ready.outcome) return ready.outcome;
    const { run, items: sequence, state, armed } = ready;
    // Standalone targets went first; a call of theirs that failed is sent again meanwhile.
    const retries = armed
      ? sendDueRetries(ctx, run.input.trigger.upsId, standaloneOf(run, ctx))
      : Promise.resolve();
    try {
      for (const target of sequence) {
        const watch = (state[target.id] ??= {});
        if (watch.done) continue;
        // Mains back and held before this node's turn: it and the rest are not started.
        if (!watch.sentAt) {
          const notBegun = sequence.filter((t) => !state[t.id]?.sentAt && !state[t.id]?.done);
          const spared = await spareNotBegun(ctx, run.plan, notBegun);
          for (const t of spared) (state[t.id] ??= {}).done = "spared";
          if (watch.done) continue;
        }
        const waiting = await step(ctx, run, target, watch, armed, retries);
        ctx.context.set("cluster:nodes", state);
        // The watch within the visit is over: the engine visits again at once.
        if (waiting) return poll(0, waiting);
      }
    } finally {
      await retries;
    }
    const count = (done: NodeWatch["done"]) =>
      sequence.filter((t) => state[t.id]!.done === done).map((t) => t.name);
    const parts = [
      [count("down"), "stopped answering"],
      [count("still-up"), "STILL ANSWERING after their time to go down"],
      [count("not-sent"), "not sent (unreachable or already called)"],
      [count("would-do"), "would have been shut down (dry-run)"],
      [count("spared"), "spared: mains back before their turn"],
    ] as const;
    return advance(
      parts
        .filter(([names]) => names.length > 0)
        .map(([names, what]) => `${names.join(", ")}: ${what}`)
        .join("; "),
    );
  },
};

function dropped(ctx: Ctx): Set<string> {
  return new Set(ctx.context.get<string[]>("dropped") ?? []);
}

/** The run's standalone targets that went before the clusters. */
function standaloneOf(run: SequenceRun, ctx: Ctx): PlannedTarget[] {
  const out = dropped(ctx);
  return run.plan.targets.filter((t) => !t.cluster && !t.afterClusters && !out.has(t.id));
}

/** Moves one node on; returns a phase line while it must be waited for, else null. */
async function step(
  ctx: Ctx,
  run: SequenceRun,
  target: PlannedTarget,
  watch: NodeWatch,
  armed: boolean,
  beside: Promise<unknown>,
): Promise<string | null> {
  const { db } = ctx.services;
  const upsId = run.input.trigger.upsId;
  if (!watch.sentAt) {
    // The console's standalone host, sent after the clusters: what runs there is recorded for
    // the way back as on any standalone node — beside its call, never awaited (cluster nodes'
    // guests were recorded by StopClusterGuests).
    if (target.afterClusters) void listGuestsBefore(ctx, target, armed);
    if (!armed) {
      await wouldCall(ctx, target, upsId);
      watch.done = "would-do";
      return null;
    }
    const outcome = await attemptShutdown(ctx, target, upsId);
    if (outcome.kind === "unreachable" || !target.endpoint) {
      await unreachable(ctx, target, upsId);
      watch.done = "not-sent";
      return null;
    }
    if (outcome.kind === "elsewhere") {
      ctx.log(
        `${target.name}: not sent from this run — run ${outcome.runId} holds its call for this outage; watched until it is down`,
      );
    }
    watch.accepted =
      outcome.kind === "accepted" || (outcome.kind === "elsewhere" && outcome.state === "sent");
    watch.sentAt = new Date().toISOString();
    const action = await startAction(db, {
      runId: ctx.runId,
      lane: laneOf(target),
      label: `${laneOf(target)} goes down`,
      request: `probe ${target.request?.url.replace(/\/api2\/json.*$/, "")} until it stops answering`,
    });
    watch.downActionId = action.id;
  }
  let nextRetryCheck = 0;
  const outcome = await watchWithinVisit<"down" | "still-up">(
    ctx.signal,
    async () => {
      const probe = await probeTarget(target.endpoint!, PROBE_TIMEOUT_MS);
      const now = Date.now();
      if (probe.answers) {
        delete watch.silentSince;
        // Not accepted yet (failed, unanswered, or another run's call in flight): sent again.
        if (armed && !watch.accepted && performance.now() >= nextRetryCheck) {
          nextRetryCheck = performance.now() + RETRY_CHECK_MS;
          const standing = standingOf(await outageCalls(db, [target]), target.id, ctx.runId);
          if (standing.accepted) watch.accepted = true;
          else if (attemptDue(standing, new Date())) {
            const again = await attemptShutdown(ctx, target, upsId);
            watch.accepted =
              again.kind === "accepted" || (again.kind === "elsewhere" && again.state === "sent");
          }
        }
      } else {
        watch.silentSince ??= new Date(now).toISOString();
        const silentFor = now - Date.parse(watch.silentSince);
        if (silentFor >= SILENT_CONFIRM_MS) {
          watch.why = probe.why;
          return { done: "down" };
        }
        // The second probe of the pair, once the first has been silent long enough.
        return { againInMs: SILENT_CONFIRM_MS - silentFor };
      }
      if (Date.now() - Date.parse(watch.sentAt!) >= run.plan.targetDownSeconds * 1000) {
        return { done: "still-up" };
      }
      return { againInMs: PROBE_INTERVAL_MS };
    },
    undefined,
    beside,
  );
  if (outcome === null) return `waiting for ${target.name} to stop answering before the next node`;
  if (outcome === "down") {
    watch.done = "down";
    await recordSeenDown(db, [{ target, at: new Date(watch.silentSince!) }]);
    await finishAction(db, watch.downActionId!, {
      outcome: "ok",
      detail: `stopped answering at ${watch.silentSince}: ${watch.why}`,
    });
    ctx.log(`${target.name}: stopped answering at ${watch.silentSince}`);
    return null;
  }
  watch.done = "still-up";
  await finishAction(db, watch.downActionId!, {
    outcome: "timed-out",
    detail: `still answering ${run.plan.targetDownSeconds} s after its first shutdown call`,
  });
  await report(ctx, run, {
    severity: "critical",
    kind: "target.still_up",
    message: `${target.name}: still answering ${run.plan.targetDownSeconds} s after its first shutdown call${watch.accepted ? "" : " (no call of it was accepted)"}; going on with the next node (VerifyTargetsDown looks at it once more)`,
    targetId: target.id,
  });
  return null;
}
