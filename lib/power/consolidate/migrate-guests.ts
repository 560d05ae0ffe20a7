import { and, inArray, isNotNull } from "drizzle-orm";
import { upsMonitorState } from "@/lib/db/schema";
import { errorMessage } from "@/lib/pipeline/engine";
import { advance, poll, type Step } from "@/lib/pipeline/step";
import { CLUSTER_LANE, finishAction, startAction } from "@/lib/power/records/run-actions";
import {
  ClusterApi,
  paths,
  type GuestResource,
  type GuestType,
} from "@/lib/power/clusters/sequence-api";
import {
  GUEST_READ_BACK_POLL_MS,
  MIGRATE_TIMEOUT_SECONDS,
  type ClusterSequencePlan,
} from "@/lib/power/clusters/sequence-plan";
import {
  clusterApi,
  clusterStepRun,
  handBack,
  nodeTargets,
  report,
  wouldDo,
  type Ctx,
  type SequenceRun,
} from "@/lib/power/cluster-sequence/sequence-context";
import { watchWithinVisit } from "@/lib/power/cluster-sequence/watch";
import type { PowerServices } from "@/lib/power/shutdown/services";

type Migration = {
  node: string;
  type: GuestType;
  actionId?: number;
  upid?: string;
  sentAt: string;
  done?: "moved" | "failed";
  detail?: string;
};

type ClusterMigrations = {
  actionId?: number;
  /** The final threshold came while migrating: nothing more is started. */
  finalReached?: boolean;
  done?: boolean;
  /** vmid → its migration. */
  guests: Record<string, Migration>;
};

type MigrationsState = Record<string, ClusterMigrations>;

type Guest = GuestResource & { type: GuestType };

/**
 * The first stage of a consolidation in mode migrate: every running guest of the nodes that go
 * down is migrated to the node that stays (`POST …/{qemu|lxc}/{vmid}/migrate target=…`, a VM
 * live with `online=1`, a container with `restart=1`), `guestParallelism` at once. A migration
 * is done only when the guest list, read back, shows the guest running on the node that stays;
 * its task failing, or no read-back within MIGRATE_TIMEOUT_SECONDS, is a failed one. A node
 * whose guests did not all move is handed back: it keeps running and goes down with the rest,
 * as one unit, at the final threshold. The final threshold arriving meanwhile ends the step at
 * once (migrations under way finish): the nodes go down with whatever still runs on them.
 */
export const migrateGuests: Step<PowerServices> = {
  name: "MigrateGuests",
  maxDuration: () => 7200,
  async visit(ctx) {
    const ready = await clusterStepRun<MigrationsState, ClusterSequencePlan>(ctx, {
      stateKey: "consolidate:migrate",
      none: "no migration in this run",
      select: (run) =>
        run.prepared.filter(
          (c) => c.consolidate?.stage === "first" && c.consolidate.mode === "migrate",
        ),
    });
    if (ready.outcome) return ready.outcome;
    const { run, items, state, armed } = ready;
    const waiting = () => items.filter((c) => !state[c.clusterId]?.done);
    await watchWithinVisit(ctx.signal, async () => {
      for (const cluster of items) {
        const entry = (state[cluster.clusterId] ??= { guests: {} });
        if (entry.done) continue;
        if (armed) await visitCluster(ctx, run, cluster, entry);
        else await rehearse(ctx, run, cluster, entry);
      }
      return waiting().length === 0 ? { done: true } : { againInMs: GUEST_READ_BACK_POLL_MS };
    });
    ctx.context.set("consolidate:migrate", state);
    const left = waiting().map((c) => c.name);
    if (left.length > 0) return poll(0, `migrating the guests of ${left.join(", ")}`);
    return advance(items.map((c) => summary(c, state[c.clusterId]!)).join("; "));
  },
};

/** Dry-run: the requests a migration of each running guest would send; nothing is asked. */
async function rehearse(
  ctx: Ctx,
  run: SequenceRun,
  cluster: ClusterSequencePlan,
  entry: ClusterMigrations,
): Promise<void> {
  const to = cluster.consolidate!.remainingNode ?? "?";
  await wouldDo(ctx, run, cluster, {
    label: "migrate guests",
    requests: (line) => [
      line("POST", "/nodes/{node}/qemu/{vmid}/migrate", { target: to, online: "1" }),
      line("POST", "/nodes/{node}/lxc/{vmid}/migrate", { target: to, restart: "1" }),
    ],
    detail: `each running guest of ${cluster.nodes.map((n) => n.name).join(", ")} to ${to} (VMs live, containers restarted), read back on ${to}`,
  });
  entry.done = true;
}

function summary(cluster: ClusterSequencePlan, entry: ClusterMigrations): string {
  const all = Object.values(entry.guests);
  const moved = all.filter((m) => m.done === "moved").length;
  const failed = all.filter((m) => m.done === "failed").length;
  return `${cluster.name}: ${moved} guest(s) moved to ${cluster.consolidate!.remainingNode}${failed > 0 ? `, ${failed} NOT moved` : ""}${entry.finalReached ? " (final threshold reached meanwhile)" : ""}`;
}

/** Whether the trigger latched on a UPS feeding the cluster's nodes: the final stage is due. */
async function finalReached(
  ctx: Ctx,
  run: SequenceRun,
  cluster: ClusterSequencePlan,
): Promise<boolean> {
  const upsIds = [
    ...new Set(nodeTargets(run.plan, cluster).flatMap((t) => t.feeds.map((f) => f.upsId))),
  ];
  if (upsIds.length === 0) return false;
  const latched = await ctx.services.db
    .select({ upsId: upsMonitorState.upsId })
    .from(upsMonitorState)
    .where(and(inArray(upsMonitorState.upsId, upsIds), isNotNull(upsMonitorState.latchedAt)));
  return latched.length > 0;
}

/** One look at one cluster's migrations: read back, start the next ones, end when all ended. */
async function visitCluster(
  ctx: Ctx,
  run: SequenceRun,
  cluster: ClusterSequencePlan,
  entry: ClusterMigrations,
): Promise<void> {
  const { db } = ctx.services;
  const target = cluster.consolidate!.remainingNode;
  const reach = await clusterApi(ctx, run.plan, cluster);
  if (!target || !reach.api) {
    // The check passed, so this is a plan the check did not see: hand the nodes back.
    const why = !target ? "no node stays up" : reach.api ? "" : reach.why;
    await handBackNodes(
      ctx,
      run,
      cluster,
      cluster.nodes.map((n) => n.name),
      why,
    );
    entry.done = true;
    return;
  }
  const { api } = reach;
  const leaving = new Set(cluster.nodes.map((n) => n.name));
  if (entry.actionId === undefined) {
    const action = await startAction(db, {
      runId: ctx.runId,
      lane: CLUSTER_LANE,
      label: "migrate guests",
      request: `${api.line("GET", paths.guests)} until every guest of ${[...leaving].join(", ")} runs on ${target}`,
    });
    entry.actionId = action.id;
  }
  const listed = await api.guests();
  const now = Date.now();

  // Read back what is under way: on the node that stays and running is moved; a task that
  // ended in error, or silence past the deadline, is failed.
  for (const [vmid, migration] of Object.entries(entry.guests)) {
    if (migration.done) continue;
    const guest = listed.find((g) => String(g.vmid) === vmid);
    if (guest?.node === target && guest.status === "running" && !guest.lock) {
      await settle(ctx, migration, "moved", `read back: running on ${target}`);
      continue;
    }
    if (migration.upid) {
      const task = await api.taskStatus(migration.node, migration.upid).catch(() => null);
      if (task?.status === "stopped" && task.exitstatus !== "OK") {
        await settle(ctx, migration, "failed", task.exitstatus ?? "the task ended without status");
        continue;
      }
    }
    if (now - Date.parse(migration.sentAt) > MIGRATE_TIMEOUT_SECONDS * 1000) {
      await settle(
        ctx,
        migration,
        "failed",
        `not running on ${target} ${MIGRATE_TIMEOUT_SECONDS} s after its migration`,
        "timed-out",
      );
    }
  }

  if (!entry.finalReached && (await finalReached(ctx, run, cluster))) {
    entry.finalReached = true;
    ctx.log(
      `${cluster.name}: the final threshold was reached while migrating: no further migration; ${[...leaving].join(", ")} go down now with the guests still on them`,
    );
  }
  const toMove = listed.filter(
    (g): g is Guest =>
      (g.type === "qemu" || g.type === "lxc") &&
      g.status === "running" &&
      g.template !== 1 &&
      leaving.has(g.node),
  );
  const inFlight = Object.values(entry.guests).filter((m) => !m.done).length;
  const fresh = entry.finalReached
    ? []
    : toMove
        .filter((g) => !entry.guests[String(g.vmid)])
        .slice(0, Math.max(0, cluster.guestParallelism - inFlight));
  await Promise.all(fresh.map((guest) => send(ctx, api, target, guest, entry)));

  const open = Object.values(entry.guests).filter((m) => !m.done);
  const unsent = entry.finalReached ? [] : toMove.filter((g) => !entry.guests[String(g.vmid)]);
  if (open.length > 0 || unsent.length > 0) return;

  entry.done = true;
  const all = Object.entries(entry.guests);
  const failed = all.filter(([, m]) => m.done === "failed");
  const stuck = new Set(failed.map(([, m]) => m.node));
  if (!entry.finalReached) {
    // A guest that could not move keeps its node up: it goes down at the final threshold.
    for (const guest of toMove) stuck.add(guest.node);
  }
  const moved = all.filter(([, m]) => m.done === "moved").map(([vmid]) => vmid);
  await finishAction(db, entry.actionId, {
    outcome: failed.length === 0 ? "ok" : "failed",
    detail: `read back: ${moved.length} guest(s) running on ${target}${failed.length > 0 ? `; NOT moved: ${failed.map(([vmid, m]) => `${m.type} ${vmid} on ${m.node} (${m.detail})`).join(", ")}` : ""}`,
  });
  if (!entry.finalReached && stuck.size > 0) {
    await handBackNodes(
      ctx,
      run,
      cluster,
      [...stuck],
      `their guests did not all move: ${failed.map(([vmid, m]) => `${m.type} ${vmid} (${m.detail})`).join(", ") || "guests still running there"}`,
    );
  }
  const going = [...leaving].filter((n) => entry.finalReached || !stuck.has(n));
  await report(ctx, run, {
    severity: "info",
    kind: "consolidate.moved",
    message: `${cluster.name}: ${moved.length} guest(s) moved to ${target}${moved.length > 0 ? ` (${moved.join(", ")})` : ""}; ${going.length > 0 ? `${going.join(", ")} go down now` : "no node goes down now"}, ${target} runs until the final threshold`,
    data: { clusterId: cluster.clusterId, moved, failed: failed.map(([vmid]) => vmid) },
  });
}

async function send(
  ctx: Ctx,
  api: ClusterApi,
  target: string,
  guest: Guest,
  entry: ClusterMigrations,
): Promise<void> {
  const request = api.line(
    "POST",
    paths.migrate(guest.node, guest.type, guest.vmid),
    ClusterApi.migrateForm(guest, target),
  );
  const action = await startAction(ctx.services.db, {
    runId: ctx.runId,
    lane: guest.node,
    label: `migrate ${guest.type} ${guest.vmid} → ${target}`,
    request,
  });
  const migration: Migration = {
    node: guest.node,
    type: guest.type,
    actionId: action.id,
    sentAt: new Date().toISOString(),
  };
  entry.guests[String(guest.vmid)] = migration;
  ctx.log(`${guest.type}/${guest.vmid} on ${guest.node}: ${request}`);
  try {
    migration.upid = await api.migrate(guest, target);
  } catch (error) {
    await settle(ctx, migration, "failed", errorMessage(error));
  }
}

async function settle(
  ctx: Ctx,
  migration: Migration,
  done: "moved" | "failed",
  detail: string,
  outcome: "ok" | "failed" | "timed-out" = done === "moved" ? "ok" : "failed",
): Promise<void> {
  migration.done = done;
  migration.detail = detail;
  if (migration.actionId !== undefined) {
    await finishAction(ctx.services.db, migration.actionId, { outcome, detail });
    delete migration.actionId;
  }
  if (done === "failed") ctx.log(`migration from ${migration.node} FAILED: ${detail}`);
}

/** Nodes that keep running: handed back to the final threshold, said plainly. */
async function handBackNodes(
  ctx: Ctx,
  run: SequenceRun,
  cluster: ClusterSequencePlan,
  nodes: readonly string[],
  why: string,
): Promise<void> {
  const ids = cluster.nodes
    .filter((n) => nodes.includes(n.name))
    .flatMap((n) => (n.targetId ? [n.targetId] : []));
  handBack(ctx, ids);
  await report(ctx, run, {
    severity: "critical",
    kind: "consolidate.fell_back",
    message: `${cluster.name}: ${nodes.join(", ")} NOT shut down at the first threshold — ${why}. ${nodes.length === 1 ? "It keeps" : "They keep"} running and go${nodes.length === 1 ? "es" : ""} down with the nodes still up, as one unit, at the final threshold.`,
    data: { clusterId: cluster.clusterId, nodes },
  });
}
