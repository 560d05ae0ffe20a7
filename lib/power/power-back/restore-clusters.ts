import { errorMessage } from "@/lib/pipeline/engine";
import { advance, poll, type Step } from "@/lib/pipeline/step";
import { clearCephFlags, rearmHa, type RestoreItem } from "@/lib/power/clusters/restore";
import { clusterApiOver, paths, requestLine } from "@/lib/power/clusters/sequence-api";
import { CLUSTER_LANE, startAction } from "@/lib/power/records/run-actions";
import type { PowerServices } from "@/lib/power/shutdown/services";
import type { BackCluster, PowerBackPlan } from "./back-plan";
import { backRun, reportBack, waitingFor, wouldBack, type BackCtx } from "./back-context";

/** How long Ceph may take to bring every placement group back to active after the nodes. */
export const CEPH_PGS_WAIT_SECONDS = 900;

type RestoreState = Record<string, { done?: boolean; pgsSince?: string; items?: RestoreItem[] }>;

/**
 * Per cluster the outage changed: Ceph first — wait until no placement group is down or
 * inactive (clearing `noout` while OSDs still peer would start a rebalance the flags were set to
 * prevent), then clear exactly the flags this outage set, read back — and then re-arm HA, read
 * back (shared with the Restore button: lib/power/clusters/restore.ts). A cluster whose
 * placement groups do not settle within CEPH_PGS_WAIT_SECONDS keeps its flags and is reported.
 */
export const restoreClusters: Step<PowerServices> = {
  name: "RestoreClusters",
  maxDuration: () => CEPH_PGS_WAIT_SECONDS + 300,
  async visit(ctx) {
    const ready = await backRun(ctx);
    if (ready.outcome) return ready.outcome;
    const { plan, armed } = ready;
    const clusters = plan.clusters.filter((c) => c.cephFlags.length > 0 || c.haDisarmed);
    if (clusters.length === 0)
      return advance("skipped — this outage left no Ceph flag set and HA armed");
    const state = ctx.context.get<RestoreState>("back:restore") ?? {};
    const waits: string[] = [];
    for (const cluster of clusters) {
      const entry = (state[cluster.clusterId] ??= {});
      if (entry.done) continue;
      if (!armed) {
        await wouldRestore(ctx, plan, cluster);
        entry.done = true;
        continue;
      }
      const wait = await restoreOne(ctx, plan, cluster, entry);
      if (wait) waits.push(wait);
    }
    ctx.context.set("back:restore", state);
    if (waits.length > 0) {
      return poll(
        2,
        waitingFor(ctx, `RestoreClusters (up to ${CEPH_PGS_WAIT_SECONDS} s)`, waits.join("; ")),
      );
    }
    return advance(
      armed
        ? clusters
            .map(
              (c) =>
                `${c.name}: ${(state[c.clusterId]!.items ?? []).map((i) => `${i.what} ${i.outcome}`).join(", ")}`,
            )
            .join("; ")
        : "dry-run — recorded what it would do, nothing sent",
    );
  },
};

async function wouldRestore(ctx: BackCtx, plan: PowerBackPlan, cluster: BackCluster) {
  const endpoint = plan.hosts.find(
    (h) => h.clusterId === cluster.clusterId && h.endpoint,
  )?.endpoint;
  const line = (method: "GET" | "PUT" | "POST", path: string) =>
    endpoint ? requestLine(endpoint, method, path) : `${method} ${path}`;
  if (cluster.cephFlags.length > 0) {
    await wouldBack(ctx, {
      lane: CLUSTER_LANE,
      label: "clear Ceph flags",
      request: `${line("GET", paths.cephStatus)} until no PG is down or inactive; ${line("PUT", paths.cephFlags)} ${cluster.cephFlags.map((f) => `${f}=0`).join(" ")}`,
      detail: cluster.name,
    });
  }
  if (cluster.haDisarmed) {
    await wouldBack(ctx, {
      lane: CLUSTER_LANE,
      label: "re-arm HA",
      request: line("POST", paths.armHa),
      detail: cluster.name,
    });
  }
}

/** One look at one cluster; returns what it still waits for, or null when it is done. */
async function restoreOne(
  ctx: BackCtx,
  plan: PowerBackPlan,
  cluster: BackCluster,
  entry: RestoreState[string],
): Promise<string | null> {
  const { db } = ctx.services;
  const up = new Set(ctx.context.get<{ up: string[] }>("back:wait")?.up ?? []);
  const endpoints = plan.hosts
    .filter((h) => h.clusterId === cluster.clusterId && h.endpoint && up.has(h.targetId))
    .map((h) => h.endpoint!);
  if (endpoints.length === 0) {
    // None of its nodes came back: nothing to ask, and nothing to wait for.
    entry.done = true;
    await reportBack(ctx, {
      severity: "critical",
      kind: "power_back.failed",
      message: `${cluster.name}: none of its nodes came back: its Ceph flags and HA are left as the outage left them; restore it on /power once it is up`,
    });
    return null;
  }
  entry.pgsSince ??= new Date().toISOString();
  const late = Date.now() - Date.parse(entry.pgsSince) > CEPH_PGS_WAIT_SECONDS * 1000;
  const reach = await clusterApiOver(db, endpoints, {
    timeoutMs: 10_000,
    onSecret: ctx.services.maskSecret,
  }).catch((error: unknown) => ({ api: null, why: errorMessage(error) }));
  if (!reach.api) {
    if (!late) return `an API of ${cluster.name} (${reach.why})`;
    entry.done = true;
    await reportBack(ctx, {
      severity: "critical",
      kind: "power_back.failed",
      message: `${cluster.name}: no node answers after ${CEPH_PGS_WAIT_SECONDS} s: its Ceph flags and HA are left as the outage left them; restore it on /power once it is up`,
    });
    return null;
  }
  const api = reach.api;
  const items: RestoreItem[] = [];
  if (cluster.cephFlags.length > 0) {
    let inactive: { state: string; count: number }[] | string;
    try {
      inactive = await api.inactivePgs();
    } catch (error) {
      inactive = `the Ceph status could not be read: ${errorMessage(error)}`;
    }
    const pending = typeof inactive === "string" || inactive.length > 0;
    if (pending && !late) {
      return `Ceph of ${cluster.name}: ${typeof inactive === "string" ? inactive : inactive.map((p) => `${p.count} PG ${p.state}`).join(", ")}`;
    }
    if (pending) {
      items.push({
        what: "Ceph flags",
        outcome: "failed",
        detail: `placement groups still down or inactive after ${CEPH_PGS_WAIT_SECONDS} s: the flags stay set (clear them on /power once Ceph is healthy)`,
      });
    } else {
      const action = await startAction(db, {
        runId: ctx.runId,
        lane: CLUSTER_LANE,
        label: "clear Ceph flags",
        request: api.line(
          "PUT",
          paths.cephFlags,
          Object.fromEntries(cluster.cephFlags.map((f) => [f, "0"])),
        ),
      });
      const item = await clearCephFlags(api, cluster.cephFlags);
      await action.finish({
        outcome: item.outcome === "restored" ? "ok" : "failed",
        detail: item.detail,
      });
      items.push(item);
    }
  }
  if (cluster.haDisarmed) {
    const action = await startAction(db, {
      runId: ctx.runId,
      lane: CLUSTER_LANE,
      label: "re-arm HA",
      request: api.line("POST", paths.armHa),
    });
    const item = await rearmHa(api);
    await action.finish({
      outcome: item.outcome === "failed" ? "failed" : "ok",
      detail: item.detail,
    });
    items.push(item);
  }
  entry.items = items;
  entry.done = true;
  for (const item of items)
    ctx.log(`${cluster.name}: ${item.what}: ${item.outcome}: ${item.detail}`);
  const failed = items.filter((i) => i.outcome === "failed");
  if (failed.length > 0) {
    await reportBack(ctx, {
      severity: "critical",
      kind: "power_back.failed",
      message: `${cluster.name}: not restored: ${failed.map((i) => `${i.what}: ${i.detail}`).join("; ")}`,
    });
  }
  return null;
}
