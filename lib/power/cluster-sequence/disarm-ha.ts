import { errorMessage } from "@/lib/pipeline/engine";
import { advance, poll, type Step } from "@/lib/pipeline/step";
import {
  CLUSTER_LANE,
  finishAction,
  recordInstantAction,
  startAction,
} from "@/lib/power/records/run-actions";
import type { PowerServices } from "@/lib/power/shutdown/services";
import { isNotImplemented, paths } from "../clusters/sequence-api";
import {
  HA_DISARM_WAIT_SECONDS,
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

export const HA_NOT_AVAILABLE =
  "HA protection is not available: this Proxmox VE has no disarm-ha (it arrived with 9.2). HA stays armed while the nodes go down, so it may fence a node or start its HA guests elsewhere; the sequence stops every guest through HA first, which is all that can be done here";

type HaState = Record<
  string,
  {
    actionId?: number;
    sentAt?: string;
    done?: "disarmed" | "not-disarmed" | "unavailable" | "fell-back";
  }
>;

/**
 * First step of a cluster's sequence: `POST /cluster/ha/status/disarm-ha resource-mode=ignore`,
 * then `GET /cluster/ha/status/current` until the fencing entry reads `disarmed` — only that
 * read-back counts. Before 9.2 the endpoint does not exist: said plainly, and the sequence goes
 * on (the guests are stopped through HA next). A disarm that could not be sent or did not show
 * is reported and the sequence goes on too: the battery does not wait. When no member's API
 * answers (or asking fails in a way nothing here fixes) the cluster falls back to its nodes'
 * own shutdowns (sequence-context.ts `fallBack`).
 */
export const disarmHa: Step<PowerServices> = {
  name: "DisarmHa",
  maxDuration: () => 600,
  async visit(ctx) {
    const ready = await clusterStepRun<HaState>(ctx, {
      stateKey: "cluster:ha",
      none: "no cluster in this run whose HA is disarmed",
      // A partial outage leaves HA armed: the nodes that keep power keep its protection.
      select: (run) => run.prepared.filter((c) => !c.partial),
    });
    if (ready.outcome) return ready.outcome;
    const { run, state, armed, items: clusters } = ready;
    const waiting = () => clusters.filter((c) => !state[c.clusterId]?.done);
    await watchWithinVisit(ctx.signal, async () => {
      for (const cluster of clusters) {
        const entry = (state[cluster.clusterId] ??= {});
        if (entry.done) continue;
        if (!armed) {
          await wouldDo(ctx, run, cluster, {
            label: "disarm HA",
            requests: (line) => [
              line("POST", paths.disarmHa, { "resource-mode": "ignore" }),
              `${line("GET", paths.haStatus)} until armed-state is disarmed`,
            ],
          });
          entry.done = "disarmed";
          continue;
        }
        try {
          await visitCluster(ctx, run, cluster, entry);
        } catch (error) {
          entry.done = "fell-back";
          await fallBack(ctx, run, cluster, `HA could not be disarmed: ${errorMessage(error)}`);
        }
      }
      return waiting().length === 0 ? { done: true } : { againInMs: READ_BACK_POLL_MS };
    });
    ctx.context.set("cluster:ha", state);
    const left = waiting().map((c) => c.name);
    if (left.length > 0) return poll(0, `waiting for HA of ${left.join(", ")} to disarm`);
    return advance(
      clusters.map((c) => `${c.name}: HA ${describe(state[c.clusterId]!.done!)}`).join("; "),
    );
  },
};

function describe(done: NonNullable<HaState[string]["done"]>): string {
  return done === "disarmed"
    ? "disarmed"
    : done === "unavailable"
      ? "protection not available (before 9.2)"
      : done === "fell-back"
        ? "NOT disarmed: its nodes are shut down one by one"
        : "NOT disarmed";
}

async function visitCluster(
  ctx: Ctx,
  run: SequenceRun,
  cluster: ClusterSequencePlan,
  entry: HaState[string],
): Promise<void> {
  const { db } = ctx.services;
  const reach = await clusterApi(ctx, run.plan, cluster);
  if (!reach.api) {
    entry.done = "fell-back";
    await fallBack(ctx, run, cluster, `HA could not be disarmed: ${reach.why}`);
    return;
  }
  const { api } = reach;
  if (!entry.sentAt && (cluster.consolidate?.downAtFirst.length ?? 0) > 0) {
    // The first stage disarmed HA; the node left has no quorum now, and Proxmox refuses a
    // disarm without it. Still disarmed (read back) is all this step has to establish.
    const state = await api.haArmedState().catch(() => undefined);
    if (state === "disarmed") {
      entry.done = "disarmed";
      await recordInstantAction(db, {
        runId: ctx.runId,
        lane: CLUSTER_LANE,
        label: "disarm HA",
        request: api.line("GET", paths.haStatus),
        outcome: "ok",
        detail: "read back: armed-state disarmed (since the first stage of consolidating)",
      });
      ctx.log(`${cluster.name}: HA still disarmed since the first stage (read back)`);
      return;
    }
  }
  if (!entry.sentAt) {
    const request = api.line("POST", paths.disarmHa, { "resource-mode": "ignore" });
    ctx.log(`${cluster.name}: ${request}`);
    const action = await startAction(db, {
      runId: ctx.runId,
      lane: CLUSTER_LANE,
      label: "disarm HA",
      request,
    });
    try {
      await api.disarmHa();
    } catch (error) {
      const unavailable = isNotImplemented(error);
      // Refused because it is done already (another group of the same name, maybe the same
      // cluster, disarmed it first): the read-back is what counts.
      if (!unavailable && (await api.haArmedState().catch(() => null)) === "disarmed") {
        entry.done = "disarmed";
        await action.finish({
          outcome: "ok",
          detail: `read back: armed-state disarmed already (the call answered: ${errorMessage(error)})`,
        });
        ctx.log(`${cluster.name}: HA already disarmed (read back)`);
        return;
      }
      const detail = unavailable ? HA_NOT_AVAILABLE : errorMessage(error);
      entry.done = unavailable ? "unavailable" : "not-disarmed";
      await action.finish({ outcome: "failed", detail });
      await report(ctx, run, {
        severity: unavailable ? "warning" : "critical",
        kind: "shutdown.failed",
        message: `${cluster.name}: ${unavailable ? detail : `HA NOT disarmed: ${detail}; going on with the guests`}`,
      });
      return;
    }
    entry.actionId = action.id;
    entry.sentAt = new Date().toISOString();
  }
  let armedState: string | null | undefined;
  let readError: string | undefined;
  try {
    armedState = await api.haArmedState();
  } catch (error) {
    readError = errorMessage(error);
  }
  if (armedState === "disarmed") {
    entry.done = "disarmed";
    await finishAction(db, entry.actionId!, {
      outcome: "ok",
      detail: "read back: armed-state disarmed",
    });
    ctx.log(`${cluster.name}: HA disarmed (read back: armed-state disarmed)`);
    return;
  }
  if (Date.now() - Date.parse(entry.sentAt) < HA_DISARM_WAIT_SECONDS * 1000) return;
  entry.done = "not-disarmed";
  const seen = readError
    ? `the status could not be read: ${readError}`
    : `armed-state still ${armedState ?? "absent"}`;
  await finishAction(db, entry.actionId!, {
    outcome: "timed-out",
    detail: `${HA_DISARM_WAIT_SECONDS} s after disarm-ha: ${seen}`,
  });
  await report(ctx, run, {
    severity: "critical",
    kind: "shutdown.failed",
    message: `${cluster.name}: HA NOT disarmed ${HA_DISARM_WAIT_SECONDS} s after disarm-ha (${seen}); going on with the guests`,
  });
}
