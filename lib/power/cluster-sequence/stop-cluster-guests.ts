import { errorMessage } from "@/lib/pipeline/engine";
import { advance, poll, type Step } from "@/lib/pipeline/step";
import { CLUSTER_LANE, finishAction, startAction } from "@/lib/power/records/run-actions";
import type { PowerServices } from "@/lib/power/shutdown/services";
import { recordGuestsBefore } from "@/lib/power/records/guests-before";
import { readGuestsBefore } from "../clusters/guests-before";
import {
  isNotImplemented,
  paths,
  type ClusterApi,
  type GuestResource,
  type GuestType,
} from "../clusters/sequence-api";
import {
  FORCE_STOP_SECONDS,
  GUEST_READ_BACK_POLL_MS,
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

type GuestWork = {
  node: string;
  type: GuestType;
  actionId?: number;
  sentAt?: string;
  forcedAt?: string;
};

type ClusterGuests = {
  done?: "stopped" | "not-stopped" | "fell-back";
  actionId?: number;
  startedAt?: string;
  mode?: "bulk" | "per-guest";
  /** Guests running when the step began. */
  count?: number;
  /** Bulk mode: when the stragglers were force-stopped by the console. */
  forcedAt?: string;
  /** vmid → its own shutdown (per-guest mode) or force-stop (either mode). */
  guests: Record<string, GuestWork>;
};

type GuestsState = Record<string, ClusterGuests>;

const key = (g: Pick<GuestResource, "vmid">) => String(g.vmid);

/**
 * Second step: every guest of the whole cluster shut down, but the console's own — not each
 * node its own later, which is how a Ceph cluster freezes. Proxmox's bulk action where the node
 * offers it (9.0+), else one shutdown per guest with the console's own bounded parallelism;
 * each with the guest timeout and force-stop, and a force-stop from the console for stragglers.
 * Done only when the cluster's guest list, read back, shows none running but the excluded one.
 * Guests that cannot be listed — a token that cannot see every guest (no `VM.Audit` on `/vms`:
 * its empty list would read as "no guests"), no member's API answering, any error reading the
 * list — give up the cluster-wide preparation: the cluster falls back to its nodes' own
 * shutdowns, which stop their own guests (sequence-context.ts `fallBack`). A hard power loss
 * is strictly worse.
 */
export const stopClusterGuests: Step<PowerServices> = {
  name: "StopClusterGuests",
  maxDuration: () => 7200,
  async visit(ctx) {
    const ready = await clusterStepRun<GuestsState>(ctx, {
      stateKey: "cluster:guests",
      none: "no cluster in this run whose guests are stopped",
      // A consolidation's first stage that migrates moves the guests instead (MigrateGuests).
      select: (run) =>
        run.prepared.filter(
          (c) => !(c.consolidate?.stage === "first" && c.consolidate.mode === "migrate"),
        ),
    });
    if (ready.outcome) return ready.outcome;
    const { run, state, armed, items: clusters } = ready;
    const waiting = () => clusters.filter((c) => !state[c.clusterId]?.done);
    await watchWithinVisit(ctx.signal, async () => {
      for (const cluster of clusters) {
        const refusal = await visitOnce(ctx, run, cluster, state, armed).catch(
          (error: unknown) => `the guests could not be stopped: ${errorMessage(error)}`,
        );
        if (refusal) {
          state[cluster.clusterId]!.done = "fell-back";
          await fallBack(ctx, run, cluster, refusal);
        }
      }
      return waiting().length === 0 ? { done: true } : { againInMs: GUEST_READ_BACK_POLL_MS };
    });
    ctx.context.set("cluster:guests", state);
    const left = waiting().map((c) => c.name);
    if (left.length > 0) return poll(0, `stopping the guests of ${left.join(", ")}`);
    return advance(
      clusters
        .map((c) => `${c.name}: guests ${describeGuests(state[c.clusterId]!.done)}`)
        .join("; "),
    );
  },
};

function describeGuests(done: ClusterGuests["done"]): string {
  return done === "stopped"
    ? "stopped"
    : done === "fell-back"
      ? "NOT stopped cluster-wide: each node stops its own as it shuts down"
      : "NOT all stopped";
}

/** One look at one cluster's guests; returns why its preparation is given up, or null. */
async function visitOnce(
  ctx: Ctx,
  run: SequenceRun,
  cluster: ClusterSequencePlan,
  state: GuestsState,
  armed: boolean,
): Promise<string | null> {
  const entry = (state[cluster.clusterId] ??= { guests: {} });
  if (entry.done) return null;
  if (armed) return visitCluster(ctx, run, cluster, entry);
  // What ran before, for the way back (dry-run too, so its rehearsal starts the right guests):
  // reads only, nothing sent. Not at a consolidation's first stage: the nodes it shuts down stay
  // down when mains returns (docs/power.md, "Consolidate"), so there is no way back to rehearse.
  if (cluster.consolidate?.stage === "first") {
    await wouldStop(ctx, run, cluster);
    entry.done = "stopped";
    return null;
  }
  const reach = await clusterApi(ctx, run.plan, cluster).catch((error: unknown) => ({
    api: null,
    why: errorMessage(error),
  }));
  if (reach.api) {
    await recordRunningBefore(
      ctx,
      run,
      cluster,
      reach.api,
      await reach.api
        .guests()
        .then((all) => runningGuests(all, cluster))
        .catch((error: unknown) => `the guests could not be listed: ${errorMessage(error)}`),
      false,
    );
  } else {
    await recordRunningBefore(ctx, run, cluster, null, reach.why, false);
  }
  await wouldStop(ctx, run, cluster);
  entry.done = "stopped";
  return null;
}

function wouldStop(ctx: Ctx, run: SequenceRun, cluster: ClusterSequencePlan): Promise<void> {
  return wouldDo(ctx, run, cluster, {
    label: "stop guests",
    requests: (line) => [line("POST", paths.bulkShutdown, bulkForm(cluster, ["<vmid>…"]))],
    detail: `every running guest of ${firstStageNodes(cluster)?.join(", ") ?? "the cluster"}${cluster.consoleGuest ? ` but ${cluster.consoleGuest.vmid} (the console's)` : ""}; one shutdown per guest where bulk actions do not exist`,
  });
}

function bulkForm(cluster: ClusterSequencePlan, vms: string[]) {
  return {
    vms,
    timeout: String(cluster.guestTimeoutSeconds),
    "force-stop": "1",
    "max-workers": String(Math.min(64, cluster.guestParallelism)),
  };
}

/** Returns why the cluster's preparation is given up, or null. */
async function visitCluster(
  ctx: Ctx,
  run: SequenceRun,
  cluster: ClusterSequencePlan,
  entry: ClusterGuests,
): Promise<string | null> {
  const { db } = ctx.services;
  const reach = await clusterApi(ctx, run.plan, cluster);
  if (!reach.api) return `the guests cannot be listed: ${reach.why}`;
  const { api } = reach;
  if (!entry.startedAt) {
    // Only a token that sees every guest may conclude "none running" from the list.
    if (!(await api.seesAllGuests())) {
      return `could not see the guests: the console's token (${api.endpoint.apiTokenId}) has no VM.Audit on /vms, so Proxmox leaves guests out of the list without a word — an empty list here is "could not see", not "no guests". Grant VM.Audit on /vms to the token (the CluPilot role has it)`;
    }
  }
  const running = runningGuests(await api.guests(), cluster);
  const now = Date.now();

  if (!entry.startedAt) {
    entry.startedAt = new Date(now).toISOString();
    const vms = running.map(key);
    const bulkRequest = api.line("POST", paths.bulkShutdown, bulkForm(cluster, vms));
    const action = await startAction(db, {
      runId: ctx.runId,
      lane: CLUSTER_LANE,
      label: "stop guests",
      request: running.length > 0 ? bulkRequest : api.line("GET", paths.guests),
    });
    entry.actionId = action.id;
    entry.count = running.length;
    if (running.length === 0) {
      entry.done = "stopped";
      await action.finish({ outcome: "ok", detail: "read back: no guest running" });
      ctx.log(`${cluster.name}: no guest running (read back from ${paths.guests})`);
      return null;
    }
    ctx.log(`${cluster.name}: ${running.length} guest(s) running: ${vms.join(", ")}`);
    try {
      await api.bulkShutdown(bulkForm(cluster, vms));
      entry.mode = "bulk";
      ctx.log(`${cluster.name}: ${bulkRequest}`);
    } catch (error) {
      if (!isNotImplemented(error)) throw error;
      entry.mode = "per-guest";
      ctx.log(
        `${cluster.name}: no bulk actions on this Proxmox VE (before 9.0): one shutdown per guest, ${cluster.guestParallelism} at once`,
      );
    }
    // After the stop is on its way (the list above is from before it): the configs' startup
    // orders do not change when a guest stops, and the battery must not wait for them.
    await recordRunningBefore(ctx, run, cluster, api, running, true);
  }

  for (const [vmid, work] of Object.entries(entry.guests)) {
    if (work.actionId && !running.some((g) => key(g) === vmid)) {
      await finishAction(db, work.actionId, { outcome: "ok", detail: "read back: stopped" });
      delete work.actionId;
    }
  }
  if (running.length === 0) {
    entry.done = "stopped";
    await finishAction(db, entry.actionId!, {
      outcome: "ok",
      detail: `read back: no guest running${cluster.consoleGuest ? ` but ${cluster.consoleGuest.vmid} (the console's)` : ""}`,
    });
    ctx.log(`${cluster.name}: every guest stopped (read back)`);
    return null;
  }

  const started = Date.parse(entry.startedAt);
  const seconds = (ms: number) => ms / 1000;
  // Bulk: Proxmox's workers take the guests in rounds of max-workers, each up to the timeout.
  const rounds = Math.max(1, Math.ceil((entry.count ?? 1) / cluster.guestParallelism));
  if (entry.mode === "per-guest") {
    await perGuest(ctx, api, cluster, entry, running, now);
  } else if (
    !entry.forcedAt &&
    seconds(now - started) > rounds * cluster.guestTimeoutSeconds + FORCE_STOP_SECONDS
  ) {
    entry.forcedAt = new Date(now).toISOString();
    for (const guest of running) await forceStop(ctx, api, cluster, entry, guest);
  }

  const lastChance = entry.mode === "per-guest" ? latestForce(entry) : entry.forcedAt;
  const everyoneForced =
    entry.mode === "bulk"
      ? Boolean(entry.forcedAt)
      : running.every((g) => entry.guests[key(g)]?.forcedAt);
  if (everyoneForced && lastChance && seconds(now - Date.parse(lastChance)) > FORCE_STOP_SECONDS) {
    entry.done = "not-stopped";
    const still = running.map((g) => `${g.type}/${g.vmid} on ${g.node}`).join(", ");
    await finishAction(db, entry.actionId!, {
      outcome: "timed-out",
      detail: `still running after shutdown and force-stop: ${still}`,
    });
    for (const guest of running) {
      const work = entry.guests[key(guest)];
      if (work?.actionId) {
        await finishAction(db, work.actionId, { outcome: "timed-out", detail: "still running" });
        delete work.actionId;
      }
    }
    await report(ctx, run, {
      severity: "critical",
      kind: "shutdown.failed",
      message: `${cluster.name}: guests still running after shutdown and force-stop: ${still}; going on with the nodes (their own shutdown tries again)`,
    });
  }
  return null;
}

/**
 * Records the guests running before the stop for the way back (lib/power/records/guests-before.ts):
 * each one's startup order, up-delay and HA, read from its config. Never fails the step: a list
 * that could not be read is recorded as "unknown" on each node and said in the log.
 */
async function recordRunningBefore(
  ctx: Ctx,
  run: SequenceRun,
  cluster: ClusterSequencePlan,
  api: ClusterApi | null,
  running: readonly (GuestResource & { type: GuestType })[] | string,
  armed: boolean,
): Promise<void> {
  const first = run.plan.targets.find((t) => t.id === cluster.nodes[0]?.targetId);
  if (!first) return;
  const key = {
    runId: ctx.runId,
    dueSince: first.dueSince,
    clusterId: cluster.clusterId,
    mode: armed ? ("armed" as const) : ("dry-run" as const),
  };
  try {
    if (typeof running === "string" || !api) {
      const why = typeof running === "string" ? running : "no member answers";
      ctx.log(
        `${cluster.name}: what ran before is unknown (${why}); the way back cannot start those guests`,
      );
      for (const node of cluster.nodes) {
        await recordGuestsBefore(ctx.services.db, key, { unknownNode: node.name, why });
      }
      return;
    }
    const guests = await readGuestsBefore(api, running);
    await recordGuestsBefore(ctx.services.db, key, { guests });
    ctx.log(
      `${cluster.name}: recorded ${guests.length} running guest(s) for the way back${guests.some((g) => g.problem) ? ` (${guests.filter((g) => g.problem).length} without their startup order or HA: see the record)` : ""}`,
    );
  } catch (error) {
    ctx.log(`${cluster.name}: what ran before could not be recorded: ${errorMessage(error)}`);
  }
}

function latestForce(entry: ClusterGuests): string | undefined {
  const times = Object.values(entry.guests).flatMap((g) => (g.forcedAt ? [g.forcedAt] : []));
  return times.sort().at(-1);
}

/**
 * A consolidation's first stage in mode stop, or a partial outage: only the guests of the nodes
 * that go down.
 */
function firstStageNodes(cluster: ClusterSequencePlan): string[] | null {
  return cluster.consolidate?.stage === "first" || cluster.partial
    ? cluster.nodes.map((n) => n.name)
    : null;
}

/**
 * Running guests the sequence stops: not templates, not the console's own guest; at a
 * consolidation's first stage only those on the nodes that go down.
 */
function runningGuests(
  guests: readonly GuestResource[],
  cluster: ClusterSequencePlan,
): (GuestResource & { type: GuestType })[] {
  const own = cluster.consoleGuest;
  const only = firstStageNodes(cluster);
  return guests.filter(
    (g): g is GuestResource & { type: GuestType } =>
      (g.type === "qemu" || g.type === "lxc") &&
      g.status === "running" &&
      g.template !== 1 &&
      !(own && g.vmid === own.vmid) &&
      (only === null || only.includes(g.node)),
  );
}

/**
 * The console's own bounded parallelism: at most `guestParallelism` guests shutting down at
 * once; a guest still running its timeout (and the force-stop margin) after its call is
 * force-stopped.
 */
async function perGuest(
  ctx: Ctx,
  api: ClusterApi,
  cluster: ClusterSequencePlan,
  entry: ClusterGuests,
  running: readonly (GuestResource & { type: GuestType })[],
  now: number,
): Promise<void> {
  for (const guest of running) {
    const work = entry.guests[key(guest)];
    if (
      work?.sentAt &&
      !work.forcedAt &&
      now - Date.parse(work.sentAt) > (cluster.guestTimeoutSeconds + FORCE_STOP_SECONDS) * 1000
    ) {
      await forceStop(ctx, api, cluster, entry, guest);
    }
  }
  const inFlight = running.filter((g) => entry.guests[key(g)]?.sentAt).length;
  const waiting = running.filter((g) => !entry.guests[key(g)]?.sentAt);
  const form = { timeout: String(cluster.guestTimeoutSeconds), forceStop: "1" };
  await Promise.all(
    waiting.slice(0, Math.max(0, cluster.guestParallelism - inFlight)).map(async (guest) => {
      const request = api.line(
        "POST",
        paths.guest(guest.node, guest.type, guest.vmid, "shutdown"),
        form,
      );
      const action = await startAction(ctx.services.db, {
        runId: ctx.runId,
        lane: guest.node,
        label: `shutdown ${guest.type} ${guest.vmid}`,
        request,
      });
      const work: GuestWork = { node: guest.node, type: guest.type, actionId: action.id };
      entry.guests[key(guest)] = work;
      try {
        await api.guestAction(guest, "shutdown", form);
        work.sentAt = new Date().toISOString();
      } catch (error) {
        // Counted as sent: the force-stop follows after the timeout all the same.
        work.sentAt = new Date().toISOString();
        await action.finish({ outcome: "failed", detail: errorMessage(error) });
        delete work.actionId;
        ctx.log(
          `${guest.type}/${guest.vmid} on ${guest.node}: shutdown FAILED: ${errorMessage(error)}`,
        );
      }
    }),
  );
}

async function forceStop(
  ctx: Ctx,
  api: ClusterApi,
  cluster: ClusterSequencePlan,
  entry: ClusterGuests,
  guest: GuestResource & { type: GuestType },
): Promise<void> {
  const work = (entry.guests[key(guest)] ??= { node: guest.node, type: guest.type });
  if (work.actionId) {
    await finishAction(ctx.services.db, work.actionId, {
      outcome: "timed-out",
      detail: `still running ${cluster.guestTimeoutSeconds} s after its shutdown: force-stopped`,
    });
  }
  work.forcedAt = new Date().toISOString();
  const request = api.line("POST", paths.guest(guest.node, guest.type, guest.vmid, "stop"));
  const action = await startAction(ctx.services.db, {
    runId: ctx.runId,
    lane: guest.node,
    label: `force-stop ${guest.type} ${guest.vmid}`,
    request,
  });
  work.actionId = action.id;
  ctx.log(`${guest.type}/${guest.vmid} on ${guest.node}: still running: ${request}`);
  try {
    await api.guestAction(guest, "stop");
  } catch (error) {
    await action.finish({ outcome: "failed", detail: errorMessage(error) });
    delete work.actionId;
  }
}
