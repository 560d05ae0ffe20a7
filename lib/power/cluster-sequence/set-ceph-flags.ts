import { errorMessage } from "@/lib/pipeline/engine";
import { advance, poll, type Step } from "@/lib/pipeline/step";
import { CLUSTER_LANE, finishAction, startAction } from "@/lib/power/records/run-actions";
import type { PowerServices } from "@/lib/power/shutdown/services";
import { paths, SHUTDOWN_CEPH_FLAGS, type ClusterApi } from "../clusters/sequence-api";
import {
  CEPH_FLAGS_WAIT_SECONDS,
  PARTIAL_OUTAGE_CEPH_FLAGS,
  READ_BACK_POLL_MS,
  type ClusterSequencePlan,
} from "../clusters/sequence-plan";
import {
  clusterApi,
  clusterStepRun,
  fallBack,
  report,
  wouldDo,
  type Ctx,
  type SequenceRun,
} from "./sequence-context";
import { watchWithinVisit } from "./watch";

type CephState = Record<
  string,
  {
    actionId?: number;
    /** bulk: PUT /cluster/ceph/flags sent; single: each missing flag PUT on its own. */
    phase?: "bulk" | "single";
    phaseAt?: string;
    done?: "set" | "not-set" | "fell-back";
  }
>;

/**
 * Third step, hyper-converged clusters only: `noout`, `nobackfill`, `norecover`, `norebalance`
 * with `PUT /cluster/ceph/flags`, read back; a flag the bulk call did not set is put on its own
 * (`PUT /cluster/ceph/flags/{flag}`) and read back again. Still not set: the run says which and
 * goes on with the nodes — the battery decides, not the flags. A partial outage sets `noout`
 * alone: the nodes that keep power keep Ceph serving, and must not be held back from recovering.
 */
export const setCephFlags: Step<PowerServices> = {
  name: "SetCephFlags",
  maxDuration: () => 600,
  async visit(ctx) {
    const ready = await clusterStepRun<CephState>(ctx, {
      stateKey: "cluster:ceph",
      none: "no hyper-converged Ceph cluster in this run",
      select: (run) => run.prepared.filter((c) => c.hyperConverged),
    });
    if (ready.outcome) return ready.outcome;
    const { run, items: clusters, state, armed } = ready;
    const waiting = () => clusters.filter((c) => !state[c.clusterId]?.done);
    await watchWithinVisit(ctx.signal, async () => {
      for (const cluster of clusters) {
        const entry = (state[cluster.clusterId] ??= {});
        if (entry.done) continue;
        if (!armed) {
          await wouldDo(ctx, run, cluster, {
            label: "set Ceph flags",
            requests: (line) => [
              line("PUT", paths.cephFlags, flagForm(flagsOf(cluster))),
              `${line("GET", paths.cephFlags)} to read back`,
            ],
          });
          entry.done = "set";
          continue;
        }
        try {
          await visitCluster(ctx, run, cluster, entry);
        } catch (error) {
          entry.done = "fell-back";
          await fallBack(
            ctx,
            run,
            cluster,
            `the Ceph flags could not be set: ${errorMessage(error)}`,
          );
        }
      }
      return waiting().length === 0 ? { done: true } : { againInMs: READ_BACK_POLL_MS };
    });
    ctx.context.set("cluster:ceph", state);
    const left = waiting().map((c) => c.name);
    if (left.length > 0) return poll(0, `setting the Ceph flags of ${left.join(", ")}`);
    return advance(
      clusters
        .map(
          (c) => `${c.name}: Ceph flags ${state[c.clusterId]!.done === "set" ? "set" : "NOT set"}`,
        )
        .join("; "),
    );
  },
};

/** The flags this cluster's sequence sets: all four, or noout alone for a partial outage. */
function flagsOf(cluster: ClusterSequencePlan): readonly string[] {
  return cluster.partial ? PARTIAL_OUTAGE_CEPH_FLAGS : SHUTDOWN_CEPH_FLAGS;
}

function flagForm(flags: readonly string[]): Record<string, string> {
  return Object.fromEntries(flags.map((f) => [f, "1"]));
}

async function missingFlags(api: ClusterApi, flags: readonly string[]): Promise<string[] | string> {
  try {
    const set = await api.cephFlags();
    return flags.filter((f) => !set.has(f));
  } catch (error) {
    return `the flags could not be read back: ${errorMessage(error)}`;
  }
}

async function visitCluster(
  ctx: Ctx,
  run: SequenceRun,
  cluster: ClusterSequencePlan,
  entry: CephState[string],
): Promise<void> {
  const { db } = ctx.services;
  const reach = await clusterApi(ctx, run.plan, cluster);
  if (!reach.api) {
    entry.done = "fell-back";
    await fallBack(ctx, run, cluster, `the Ceph flags could not be set: ${reach.why}`);
    return;
  }
  const { api } = reach;
  if (!entry.phase) {
    const request = api.line("PUT", paths.cephFlags, flagForm(flagsOf(cluster)));
    const action = await startAction(db, {
      runId: ctx.runId,
      lane: CLUSTER_LANE,
      label: "set Ceph flags",
      request,
    });
    entry.actionId = action.id;
    entry.phase = "bulk";
    entry.phaseAt = new Date().toISOString();
    ctx.log(`${cluster.name}: ${request}`);
    try {
      await api.putCephFlags(flagsOf(cluster), true);
    } catch (error) {
      ctx.log(`${cluster.name}: ${request} FAILED: ${errorMessage(error)}; one flag at a time`);
    }
  }
  const missing = await missingFlags(api, flagsOf(cluster));
  if (Array.isArray(missing) && missing.length === 0) {
    entry.done = "set";
    const how = entry.phase === "bulk" ? "" : " (one by one: the bulk call did not set them)";
    await finishAction(db, entry.actionId!, {
      outcome: "ok",
      detail: `read back: ${flagsOf(cluster).join(", ")} set${how}`,
    });
    ctx.log(`${cluster.name}: Ceph flags set, read back${how}`);
    return;
  }
  if (Date.now() - Date.parse(entry.phaseAt!) < CEPH_FLAGS_WAIT_SECONDS * 1000) return;
  if (entry.phase === "bulk" && Array.isArray(missing)) {
    // 200 without effect happens (an old ceph, a task that failed quietly): flag by flag.
    ctx.log(
      `${cluster.name}: after PUT ${paths.cephFlags} still not set: ${missing.join(", ")}; setting them one by one`,
    );
    entry.phase = "single";
    entry.phaseAt = new Date().toISOString();
    for (const flag of missing) {
      const request = api.line("PUT", paths.cephFlag(flag), { value: "1" });
      ctx.log(`${cluster.name}: ${request}`);
      try {
        await api.putCephFlag(flag, true);
      } catch (error) {
        ctx.log(`${cluster.name}: ${request} FAILED: ${errorMessage(error)}`);
      }
    }
    return;
  }
  entry.done = "not-set";
  const what = Array.isArray(missing) ? `still not set: ${missing.join(", ")}` : missing;
  await finishAction(db, entry.actionId!, {
    outcome: "failed",
    detail: `${what} (bulk and one by one tried)`,
  });
  await report(ctx, run, {
    severity: "critical",
    kind: "shutdown.failed",
    message: `${cluster.name}: Ceph flags ${what} after the bulk call and one by one; going on with the nodes (Ceph may start to rebalance as they go down)`,
  });
}
