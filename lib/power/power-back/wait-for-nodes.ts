import { errorMessage } from "@/lib/pipeline/engine";
import { advance, poll, type Step } from "@/lib/pipeline/step";
import { clusterApiOver } from "@/lib/power/clusters/sequence-api";
import { READ_BACK_POLL_MS } from "@/lib/power/clusters/sequence-plan";
import { watchWithinVisit } from "@/lib/power/cluster-sequence/watch";
import { recordInstantAction } from "@/lib/power/records/run-actions";
import type { PowerServices } from "@/lib/power/shutdown/services";
import { probeTarget } from "@/lib/power/targets/shutdown-call";
import type { BackHost, PowerBackPlan } from "./back-plan";
import { backRun, reportBack, SKIPPED_DRY_RUN, waitingFor, type BackCtx } from "./back-context";
import type { PowerOnState } from "./power-on-hosts";

/** How long the hosts may take to boot and the clusters to form quorum, in all. */
export const NODE_WAIT_SECONDS = 900;
const PROBE_TIMEOUT_MS = 2000;

type WaitState = {
  /** Target ids whose API answered. */
  up: string[];
  /** Cluster ids that read quorate. */
  quorate: string[];
  /** Given up at the deadline: reported, the rest goes on without them. */
  givenUp?: boolean;
};

/**
 * The hosts worth waiting for: those whose power-on went out or that were on already — Proxmox
 * VE nodes (their API on 8006) and backup servers (theirs on 8007, its pinned certificate).
 */
export function hostsToWaitFor(plan: PowerBackPlan, power: PowerOnState): BackHost[] {
  return plan.hosts.filter(
    (h) =>
      (h.endpoint || h.pbs) &&
      (power[h.targetId] === "powered-on" || power[h.targetId] === "already-on"),
  );
}

/** The API the way back waits for: a node's, or a backup server's. */
function apiOf(h: BackHost) {
  return h.endpoint ?? h.pbs!;
}

/**
 * Waits for every powered-on node's API and then each cluster's quorum (`GET /cluster/status`
 * `quorate`), up to NODE_WAIT_SECONDS in all; the phase line says what it waits for ("waiting
 * for quorum of c1: 2 of 3 online"). At the deadline the nodes still silent are reported and
 * the way back goes on with those that came: their guests cannot start, the others can.
 */
export const waitForNodes: Step<PowerServices> = {
  name: "WaitForNodes",
  maxDuration: () => NODE_WAIT_SECONDS + 120,
  async visit(ctx) {
    const ready = await backRun(ctx);
    if (ready.outcome) return ready.outcome;
    const { plan, armed } = ready;
    if (!armed) return advance(`${SKIPPED_DRY_RUN}: nothing was powered on, nothing to wait for`);
    const power = ctx.context.get<PowerOnState>("back:power") ?? {};
    const state = ctx.context.get<WaitState>("back:wait") ?? { up: [], quorate: [] };
    const hosts = hostsToWaitFor(plan, power);
    // Looked at again within the visit every READ_BACK_POLL_MS, as the shutdown's waits are: a
    // node that answers or a quorum formed is seen at once, not at the engine's next visit.
    let waits: string[] = [];
    await watchWithinVisit(ctx.signal, async () => {
      const waiting = hosts.filter((h) => !state.up.includes(h.targetId));
      const probes = await Promise.all(
        waiting.map(async (h) => ({ h, probe: await probeTarget(apiOf(h), PROBE_TIMEOUT_MS) })),
      );
      for (const { h, probe } of probes) {
        if (!probe.answers) continue;
        state.up.push(h.targetId);
        ctx.log(`${h.name}: its API answers`);
        await recordInstantAction(ctx.services.db, {
          runId: ctx.runId,
          lane: h.endpoint?.nodeName ?? h.name,
          label: `API of ${h.endpoint?.nodeName ?? h.name}`,
          outcome: "ok",
          detail: "answers",
        });
      }
      waits = [];
      const silent = hosts.filter((h) => !state.up.includes(h.targetId));
      if (silent.length > 0) {
        waits.push(
          `the API of ${silent.map((h) => h.name).join(", ")} (${hosts.length - silent.length} of ${hosts.length} answer)`,
        );
      }
      // A cluster none of whose nodes was powered on has no quorum to wait for: said, not awaited.
      const clusters = plan.clusters.filter((c) => hosts.some((h) => h.clusterId === c.clusterId));
      for (const cluster of plan.clusters.filter((c) => !clusters.includes(c))) {
        if (state.quorate.includes(cluster.clusterId)) continue;
        state.quorate.push(cluster.clusterId);
        ctx.log(`${cluster.name}: none of its nodes was powered on: no quorum to wait for`);
      }
      for (const cluster of clusters) {
        if (state.quorate.includes(cluster.clusterId)) continue;
        const quorum = await readQuorum(ctx, plan, cluster.clusterId, state.up);
        if (quorum.quorate) {
          state.quorate.push(cluster.clusterId);
          ctx.log(`${cluster.name}: quorate (${quorum.text})`);
          await recordInstantAction(ctx.services.db, {
            runId: ctx.runId,
            lane: "cluster",
            label: `quorum of ${cluster.name}`,
            outcome: "ok",
            detail: `read back: quorate, ${quorum.text}`,
          });
        } else {
          waits.push(`quorum of ${cluster.name}: ${quorum.text}`);
        }
      }
      return waits.length === 0 ? { done: true } : { againInMs: READ_BACK_POLL_MS };
    });
    ctx.context.set("back:wait", state);
    if (waits.length === 0) {
      return advance(
        `${hosts.length} node(s) answer${plan.clusters.length > 0 ? `, ${plan.clusters.length} cluster(s) quorate` : ""}`,
      );
    }
    if (ctx.elapsedSeconds < NODE_WAIT_SECONDS) {
      // The visit watched already: the next one follows at once, as the shutdown's waits do.
      return poll(
        0,
        waitingFor(ctx, `WaitForNodes (up to ${NODE_WAIT_SECONDS} s)`, waits.join("; ")),
      );
    }
    state.givenUp = true;
    ctx.context.set("back:wait", state);
    await reportBack(ctx, {
      severity: "critical",
      kind: "power_back.host_failed",
      message: `still waiting after ${NODE_WAIT_SECONDS} s for ${waits.join("; ")}: going on with what came back; the guests of nodes that did not are not started`,
    });
    return advance(`given up waiting for ${waits.join("; ")}`);
  },
};

async function readQuorum(
  ctx: BackCtx,
  plan: PowerBackPlan,
  clusterId: string,
  up: readonly string[],
): Promise<{ quorate: boolean; text: string }> {
  const endpoints = plan.hosts
    .filter((h) => h.clusterId === clusterId && h.endpoint && up.includes(h.targetId))
    .map((h) => h.endpoint!);
  if (endpoints.length === 0) return { quorate: false, text: "no node answers yet" };
  try {
    const reach = await clusterApiOver(ctx.services.db, endpoints, {
      timeoutMs: 5000,
      onSecret: ctx.services.maskSecret,
    });
    if (!reach.api) return { quorate: false, text: reach.why };
    const status = await reach.api.clusterStatus();
    const text = `${status.online.length} of ${status.nodes.length} online`;
    return { quorate: status.quorate === true, text };
  } catch (error) {
    return { quorate: false, text: `could not read /cluster/status: ${errorMessage(error)}` };
  }
}
