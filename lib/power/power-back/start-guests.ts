import { errorMessage } from "@/lib/pipeline/engine";
import { advance, poll, type Step } from "@/lib/pipeline/step";
import {
  clusterApiOver,
  paths,
  requestLine,
  type ClusterApi,
} from "@/lib/power/clusters/sequence-api";
import { GUEST_READ_BACK_POLL_MS } from "@/lib/power/clusters/sequence-plan";
import { watchWithinVisit } from "@/lib/power/cluster-sequence/watch";
import { finishAction, startAction } from "@/lib/power/records/run-actions";
import type { PowerServices } from "@/lib/power/shutdown/services";
import type { BackGuest, BackHost, PowerBackPlan } from "./back-plan";
import { backRun, waitingFor, wouldBack, type BackCtx } from "./back-context";
import { startBatches, type GuestToStart } from "./start-order";

/** A guest not reading `running` this long after its start is reported as not started. */
export const GUEST_START_SECONDS = 180;

export type GuestWork = {
  actionId?: number;
  sentAt?: string;
  runningAt?: string;
  outcome?: "running" | "failed" | "skipped";
};
type StartState = Record<string, GuestWork>;

type Guest = BackGuest & { order: number | null; up: number | null };

/**
 * Starts the guests that ran before — only those, never one that was stopped — in their startup
 * order (./start-order.ts: order ascending, unordered last, ties by VMID; `up` seconds after
 * each), at most the guest parallelism at once within one order, each confirmed by its own
 * `status/current` reading `running`. A guest already running (HA started it once re-armed) is
 * not started twice. A guest whose node did not come back, whose start fails or that does not
 * run within GUEST_START_SECONDS is reported; the others go on.
 */
export const startGuests: Step<PowerServices> = {
  name: "StartGuests",
  maxDuration: () => 4 * 3600,
  async visit(ctx) {
    const ready = await backRun(ctx);
    if (ready.outcome) return ready.outcome;
    const { plan, armed } = ready;
    if (plan.guests.length === 0)
      return advance("skipped — no guest was running before the outage");
    const batches = startBatches(
      plan.guests.map((g): Guest => ({ ...g, order: g.startupOrder, up: g.upSeconds })),
    );
    const state = ctx.context.get<StartState>("back:guests") ?? {};
    if (!armed) {
      for (const guest of batches.flat()) {
        if (state[guest.vmid]) continue;
        const host = hostOf(plan, guest.node);
        await wouldBack(ctx, {
          lane: guest.node,
          label: `start ${guest.type} ${guest.vmid}`,
          request: host?.endpoint
            ? requestLine(
                host.endpoint,
                "POST",
                paths.guest(guest.node, guest.type, guest.vmid, "start"),
              )
            : `POST ${paths.guest(guest.node, guest.type, guest.vmid, "start")}`,
          detail: `order ${guest.order ?? "none"}${guest.up ? `, up ${guest.up} s` : ""}`,
        });
        state[guest.vmid] = { outcome: "skipped" };
      }
      ctx.context.set("back:guests", state);
      return advance(`dry-run — ${plan.guests.length} guest(s) would be started, nothing sent`);
    }
    const up = new Set(ctx.context.get<{ up: string[] }>("back:wait")?.up ?? []);
    const apis: Apis = new Map();
    const unfinished = () =>
      batches.find((b) => b.some((g) => !finished(state[g.vmid], g, Date.now())));
    // Within one visit, as the shutdown's guest step does: a guest read running or an up-delay
    // passed frees its slot for the next guest at once, not at the engine's next visit.
    await watchWithinVisit(ctx.signal, async () => {
      for (;;) {
        const batch = unfinished();
        if (!batch) return { done: true };
        await lookAtBatch(ctx, plan, apis, batch, state, up);
        ctx.context.set("back:guests", state);
        const againInMs = nextLookMs(batch, state, Date.now());
        if (againInMs > 0) return { againInMs };
        // The order is done: the next one begins in the same look. Otherwise nothing is under
        // way to wait for here: the engine visits again.
        if (unfinished() === batch) return { done: true };
      }
    });
    ctx.context.set("back:guests", state);
    const batch = unfinished();
    if (batch) {
      const order = batch[0]!.order === null ? "without an order" : `of order ${batch[0]!.order}`;
      const waiting = batch.filter((g) => !finished(state[g.vmid], g, Date.now()));
      if (waiting.length === 0) return poll(0, `guests ${order} started`);
      // Only up-delays left, longer than a visit watches: the engine wakes the run for the first.
      const again = nextLookMs(batch, state, Date.now());
      return poll(
        again > GUEST_READ_BACK_POLL_MS ? again / 1000 : 0,
        `starting the guests ${order}: ${waitingFor(
          ctx,
          `StartGuests (each up to ${GUEST_START_SECONDS} s to read running)`,
          waiting.map((g) => describeWait(state[g.vmid]!, g)).join(", "),
        )}`,
      );
    }
    const all = plan.guests.map((g) => state[g.vmid]);
    const running = all.filter((w) => w?.outcome === "running").length;
    const failed = all.filter((w) => w?.outcome === "failed").length;
    return advance(
      `${running} of ${plan.guests.length} guest(s) running again${failed > 0 ? `; ${failed} NOT started` : ""}`,
    );
  },
};

type Apis = Map<string, Promise<ClusterApi | string>>;

/**
 * One look at the order being started: every guest started and not yet read running is read
 * back (side by side), then as many of the order's guests are started as slots are free.
 */
async function lookAtBatch(
  ctx: BackCtx,
  plan: PowerBackPlan,
  apis: Apis,
  batch: Guest[],
  state: StartState,
  up: ReadonlySet<string>,
): Promise<void> {
  const reading = batch.filter((g) => {
    const work = (state[g.vmid] ??= {});
    return !work.outcome && work.sentAt && !work.runningAt;
  });
  await Promise.all(reading.map((g) => readBack(ctx, plan, apis, g, state[g.vmid]!, up)));
  const now = Date.now();
  const busy = batch.filter((g) => {
    const w = state[g.vmid];
    return w?.sentAt && !finished(w, g, now);
  }).length;
  const slots = Math.max(0, plan.guestParallelism - busy);
  const next = batch
    .filter((g) => !state[g.vmid]?.sentAt && !state[g.vmid]?.outcome)
    .slice(0, slots);
  await Promise.all(next.map((g) => start(ctx, plan, apis, g, state[g.vmid]!, up)));
}

/**
 * How long until the next look at an order can change anything: a guest started and not yet
 * read running is asked again after GUEST_READ_BACK_POLL_MS; a running guest's up-delay frees
 * its slot the moment it passes; 0 when nothing started is under way (the order is done).
 */
export function nextLookMs(
  batch: readonly (GuestToStart & { vmid: number })[],
  state: Readonly<Record<string, GuestWork>>,
  now: number,
): number {
  let soonest = Number.POSITIVE_INFINITY;
  for (const guest of batch) {
    const work = state[guest.vmid];
    if (finished(work, guest, now)) continue;
    if (!work?.sentAt) continue;
    if (!work.outcome) soonest = Math.min(soonest, GUEST_READ_BACK_POLL_MS);
    else soonest = Math.min(soonest, Date.parse(work.runningAt!) + (guest.up ?? 0) * 1000 - now);
  }
  return Number.isFinite(soonest) ? Math.max(1, soonest) : 0;
}

function describeWait(work: GuestWork, guest: Guest): string {
  if (!work.sentAt) return `${guest.vmid} (not started yet)`;
  if (!work.runningAt) return `${guest.vmid} to read running`;
  return `${guest.vmid}'s up-delay of ${guest.up} s`;
}

/** Done with: failed or skipped, or running and its up-delay passed. */
function finished(work: GuestWork | undefined, guest: GuestToStart, now: number): boolean {
  if (!work?.outcome) return false;
  if (work.outcome !== "running") return true;
  return now >= Date.parse(work.runningAt!) + (guest.up ?? 0) * 1000;
}

function hostOf(plan: PowerBackPlan, node: string): BackHost | undefined {
  return plan.hosts.find((h) => h.endpoint?.nodeName === node);
}

/**
 * The API the guest's calls go to: any answering member of its cluster, or its own node. Found
 * once per visit and shared by the guests started and read back side by side.
 */
function apiFor(
  ctx: BackCtx,
  plan: PowerBackPlan,
  apis: Apis,
  host: BackHost,
  up: ReadonlySet<string>,
): Promise<ClusterApi | string> {
  const key = host.clusterId ?? host.targetId;
  const known = apis.get(key);
  if (known) return known;
  const endpoints = plan.hosts
    .filter((h) => (host.clusterId ? h.clusterId === host.clusterId : h.targetId === host.targetId))
    .filter((h) => h.endpoint && (up.size === 0 || up.has(h.targetId)))
    .map((h) => h.endpoint!);
  const api = clusterApiOver(ctx.services.db, endpoints, {
    timeoutMs: 10_000,
    onSecret: ctx.services.maskSecret,
  }).then(
    (reach) => reach.api ?? reach.why,
    (error: unknown) => errorMessage(error),
  );
  apis.set(key, api);
  return api;
}

async function start(
  ctx: BackCtx,
  plan: PowerBackPlan,
  apis: Apis,
  guest: Guest,
  work: GuestWork,
  up: ReadonlySet<string>,
): Promise<void> {
  const { db } = ctx.services;
  const host = hostOf(plan, guest.node);
  const label = `start ${guest.type} ${guest.vmid}`;
  const skip = async (why: string) => {
    work.outcome = "failed";
    const action = await startAction(db, { runId: ctx.runId, lane: guest.node, label });
    await action.finish({ outcome: "failed", detail: why });
    ctx.log(`${guest.type}/${guest.vmid} on ${guest.node}: NOT started: ${why}`);
  };
  if (!host) return skip(`${guest.node} is not one of the hosts brought back`);
  if (!up.has(host.targetId))
    return skip(`${guest.node} did not come back (its API never answered)`);
  const api = await apiFor(ctx, plan, apis, host, up);
  if (typeof api === "string") return skip(`no API of its cluster answers: ${api}`);
  const request = api.line("POST", paths.guest(guest.node, guest.type, guest.vmid, "start"));
  const action = await startAction(db, { runId: ctx.runId, lane: guest.node, label, request });
  work.actionId = action.id;
  work.sentAt = new Date().toISOString();
  try {
    // HA, once re-armed, starts its own guests: one already running is not started again. A
    // guest HA does not manage is started without asking first (a start of one running already
    // is a task that fails, and its read-back reads running): one round trip less before it.
    if (guest.haManaged && (await api.guestStatus(guest)) === "running") {
      work.runningAt = new Date().toISOString();
      work.outcome = "running";
      await action.finish({ outcome: "ok", detail: "read back: already running (started by HA)" });
      ctx.log(`${guest.type}/${guest.vmid} on ${guest.node}: already running`);
      return;
    }
    await api.startGuest(guest);
    ctx.log(`${guest.type}/${guest.vmid} on ${guest.node}: ${request}`);
  } catch (error) {
    work.outcome = "failed";
    await action.finish({ outcome: "failed", detail: errorMessage(error) });
    delete work.actionId;
    ctx.log(`${guest.type}/${guest.vmid} on ${guest.node}: start FAILED: ${errorMessage(error)}`);
  }
}

async function readBack(
  ctx: BackCtx,
  plan: PowerBackPlan,
  apis: Apis,
  guest: Guest,
  work: GuestWork,
  up: ReadonlySet<string>,
): Promise<void> {
  const host = hostOf(plan, guest.node)!;
  const api = await apiFor(ctx, plan, apis, host, up);
  let status = "unknown";
  if (typeof api !== "string") {
    status = await api
      .guestStatus(guest)
      .catch((error: unknown) => `unreadable: ${errorMessage(error)}`);
  }
  if (status === "running") {
    work.runningAt = new Date().toISOString();
    work.outcome = "running";
    if (work.actionId) {
      await finishAction(ctx.services.db, work.actionId, {
        outcome: "ok",
        detail: "read back: running",
      });
      delete work.actionId;
    }
    ctx.log(
      `${guest.type}/${guest.vmid} on ${guest.node}: running (read back)${guest.up ? `; up-delay ${guest.up} s before the next` : ""}`,
    );
    return;
  }
  if (Date.now() - Date.parse(work.sentAt!) > GUEST_START_SECONDS * 1000) {
    work.outcome = "failed";
    if (work.actionId) {
      await finishAction(ctx.services.db, work.actionId, {
        outcome: "timed-out",
        detail: `not running ${GUEST_START_SECONDS} s after its start (reads ${status})`,
      });
      delete work.actionId;
    }
    ctx.log(
      `${guest.type}/${guest.vmid} on ${guest.node}: NOT running after ${GUEST_START_SECONDS} s (reads ${status})`,
    );
  }
}
