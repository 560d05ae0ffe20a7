import { CLUSTER_LANE, recordInstantAction } from "@/lib/power/records/run-actions";
import { recordPowerEvents, type PowerEventInput } from "@/lib/power/records/power-events";
import type {
  PlannedTarget,
  ShutdownInput,
  ShutdownPlan,
} from "@/lib/power/shutdown/shutdown-plan";
import type { PowerServices } from "@/lib/power/shutdown/services";
import type { PveEndpoint } from "@/lib/power/targets/load-targets";
import { advance, fail, type Outcome, type StepContext } from "@/lib/pipeline/step";
import { NO_PLAN } from "@/lib/power/shutdown/shutdown-plan";
import { armedNow } from "@/lib/power/shutdown/shut-down-targets";
import { clusterApiOver, requestLine, type ClusterApi } from "../clusters/sequence-api";
import type { ClusterSequencePlan } from "../clusters/sequence-plan";

export type Ctx = StepContext<PowerServices>;

/** What every step of a cluster sequence reads from the run: the frozen plan and the trigger. */
export type SequenceRun = {
  plan: ShutdownPlan;
  input: ShutdownInput;
  /** The clusters still in the run: their nodes without those whose mains came back. */
  clusters: ClusterSequencePlan[];
  /**
   * Of those, the clusters still prepared cluster-wide (HA, guests, Ceph); the others fell back
   * to their nodes' own shutdowns (`fallBack`), which ShutDownClusterNodes still sends.
   */
  prepared: ClusterSequencePlan[];
};

export function sequenceRun(ctx: Ctx): SequenceRun | null {
  const plan = ctx.context.get<ShutdownPlan>("plan");
  const input = ctx.context.get<ShutdownInput>("input");
  if (!plan || !input) return null;
  // Left out: mains back before anything was sent, or handed back to the final threshold by a
  // consolidation's first stage.
  const dropped = new Set([
    ...(ctx.context.get<string[]>("dropped") ?? []),
    ...(ctx.context.get<string[]>("handedBack") ?? []),
  ]);
  const clusters = (plan.clusters ?? [])
    .map((c) => ({ ...c, nodes: c.nodes.filter((n) => !dropped.has(n.targetId!)) }))
    .filter((c) => c.nodes.length > 0);
  const fellBack = fallbacks(ctx);
  return { plan, input, clusters, prepared: clusters.filter((c) => !fellBack[c.clusterId]) };
}

/** Clusters whose cluster-wide preparation was given up, with why. */
export function fallbacks(ctx: Ctx): Record<string, string> {
  return ctx.context.get<Record<string, string>>("cluster:fallback") ?? {};
}

/**
 * Gives up a cluster's cluster-wide preparation: no member's API answers, its guests cannot be
 * listed, or a preparing call failed in a way nothing here can fix. A hard power loss is
 * strictly worse than a node-by-node shutdown without the preparation: each reachable node is
 * then shut down by its own API in the planned order (ShutDownClusterNodes), its own guests
 * stopping with it. Said once, as a critical event.
 */
export async function fallBack(
  ctx: Ctx,
  run: SequenceRun,
  cluster: ClusterSequencePlan,
  why: string,
): Promise<void> {
  const fellBack = fallbacks(ctx);
  if (fellBack[cluster.clusterId]) return;
  ctx.context.set("cluster:fallback", { ...fellBack, [cluster.clusterId]: why });
  run.prepared = run.prepared.filter((c) => c.clusterId !== cluster.clusterId);
  await report(ctx, run, {
    severity: "critical",
    kind: "cluster.fell_back",
    message: `${cluster.name}: ${why} — the cluster-wide preparation (HA disarm, stopping every guest, Ceph flags) is given up: each node is shut down by its own API in the planned order (${cluster.nodes.map((n) => n.name).join(", ")}), its own guests stopping with it`,
    data: { clusterId: cluster.clusterId, why },
  });
}

/** What a cluster step works on in this visit, once the shared preamble has passed. */
export type ClusterStep<State, Item> = {
  run: SequenceRun;
  /** The clusters (or nodes) this step concerns, never empty. */
  items: Item[];
  /** The step's own progress across visits, from the run context (empty at first). */
  state: State;
  /** Whether the run is armed now: false means record would-do actions and send nothing. */
  armed: boolean;
};

/**
 * The preamble every step of a cluster sequence shares: the frozen plan (none: the step fails
 * with NO_PLAN), the clusters or nodes it concerns (none: it advances saying so), its progress
 * so far and whether the run is armed now. An outcome means the visit is over.
 */
export async function clusterStepRun<State extends object, Item = ClusterSequencePlan>(
  ctx: Ctx,
  step: { stateKey: string; none: string; select?: (run: SequenceRun) => Item[] },
): Promise<{ outcome: Outcome } | ({ outcome: null } & ClusterStep<State, Item>)> {
  const run = sequenceRun(ctx);
  if (!run) return { outcome: fail(NO_PLAN) };
  const items = step.select ? step.select(run) : (run.prepared as Item[]);
  if (items.length === 0) return { outcome: advance(step.none) };
  const state = ctx.context.get<State>(step.stateKey) ?? ({} as State);
  const armed = await armedNow(ctx, run.plan);
  return { outcome: null, run, items, state, armed };
}

/** The planned targets of a cluster's nodes, in its shutdown order. */
export function nodeTargets(plan: ShutdownPlan, cluster: ClusterSequencePlan): PlannedTarget[] {
  return cluster.nodes.flatMap((n) => plan.targets.filter((t) => t.id === n.targetId));
}

function endpointOf(
  plan: ShutdownPlan,
  cluster: ClusterSequencePlan,
  node: string,
): PveEndpoint | null {
  const target = plan.targets.find(
    (t) => t.endpoint?.kind === "pve-node" && t.endpoint.nodeName === node,
  );
  if (target?.endpoint?.kind === "pve-node") return target.endpoint;
  // A consolidation's first stage asks the node that stays, which is not one of its targets.
  const remaining = cluster.consolidate?.remainingEndpoint;
  return remaining && remaining.nodeName === node ? remaining : null;
}

/** Hands targets back to the final threshold: this run does not cover them any more. */
export function handBack(ctx: Ctx, targetIds: readonly string[]): void {
  const back = new Set(ctx.context.get<string[]>("handedBack") ?? []);
  for (const id of targetIds) back.add(id);
  ctx.context.set("handedBack", [...back]);
}

/** A member that answered within this long is asked again without a new probe. */
const TRUSTED_FOR_MS = 5000;

type ApiRoutes = Record<string, { node: string; at: string }>;

/**
 * The API the cluster-wide calls go to: the first of the cluster's preferred nodes that answers
 * a probe now (or answered a moment ago), the others behind it for when it stops answering
 * mid-sequence (lib/power/clusters/sequence-api.ts). Null when none answers, with why.
 */
export async function clusterApi(
  ctx: Ctx,
  plan: ShutdownPlan,
  cluster: ClusterSequencePlan,
): Promise<{ api: ClusterApi } | { api: null; why: string }> {
  const endpoints = cluster.apiNodes.flatMap((node) => endpointOf(plan, cluster, node) ?? []);
  const routes = ctx.context.get<ApiRoutes>("cluster:api") ?? {};
  const last = routes[cluster.clusterId];
  const remember = (node: string) => {
    routes[cluster.clusterId] = { node, at: new Date().toISOString() };
    ctx.context.set("cluster:api", routes);
  };
  const reach = await clusterApiOver(ctx.services.db, endpoints, {
    timeoutMs: plan.callTimeoutSeconds * 1000,
    onSecret: ctx.services.maskSecret,
    trusted: last && Date.now() - Date.parse(last.at) < TRUSTED_FOR_MS ? last.node : null,
    onSwitch: (from, to, why) => {
      ctx.log(`${cluster.name}: ${from} stopped answering (${why}); asking ${to} instead`);
      remember(to);
    },
  });
  if (!reach.api) return reach;
  if (reach.api.node !== last?.node && reach.skipped.length > 0) {
    ctx.log(
      `${cluster.name}: the cluster-wide calls go to ${reach.api.node}: ${reach.skipped.join("; ")}`,
    );
  }
  remember(reach.api.node);
  return { api: reach.api };
}

/** A line in the run's log and the power event log alike. */
export async function report(
  ctx: Ctx,
  run: SequenceRun,
  event: Omit<PowerEventInput, "upsId" | "runId">,
): Promise<void> {
  ctx.log(event.message);
  await recordPowerEvents(ctx.services.db, [
    { ...event, upsId: run.input.trigger.upsId, runId: ctx.runId },
  ]);
}

/**
 * Dry-run: records the action as would-do with the exact request(s) it would send (to the node
 * the run would ask) and logs it. Nothing leaves the console.
 */
export async function wouldDo(
  ctx: Ctx,
  run: SequenceRun,
  cluster: ClusterSequencePlan,
  action: {
    label: string;
    lane?: string;
    requests: (line: ClusterApi["line"]) => string[];
    detail?: string;
  },
): Promise<void> {
  // Dry-run asks nothing, not even a probe: the line names the member a run would try first.
  const first = cluster.apiNodes.flatMap((node) => endpointOf(run.plan, cluster, node) ?? [])[0];
  const line: ClusterApi["line"] = first
    ? (method, path, form) => requestLine(first, method, path, form)
    : (method, path) => `${method} ${path}`;
  const request = action.requests(line).join("; ");
  ctx.log(`${cluster.name}: would ${action.label}: ${request} (dry-run: nothing sent)`);
  await recordInstantAction(ctx.services.db, {
    runId: ctx.runId,
    lane: action.lane ?? CLUSTER_LANE,
    label: action.label,
    request,
    outcome: "would-do",
    detail: `${cluster.name}: dry-run: nothing sent${action.detail ? `; ${action.detail}` : ""}`,
  });
}
