import { errorMessage } from "@/lib/pipeline/engine";
import { advance, poll, type Step } from "@/lib/pipeline/step";
import { readGuestsBefore } from "@/lib/power/clusters/guests-before";
import {
  clusterApiOver,
  paths,
  requestLine,
  type ClusterApi,
  type GuestType,
} from "@/lib/power/clusters/sequence-api";
import { FORCE_STOP_SECONDS, GUEST_READ_BACK_POLL_MS } from "@/lib/power/clusters/sequence-plan";
import { watchWithinVisit } from "@/lib/power/cluster-sequence/watch";
import { recordGuestsBefore } from "@/lib/power/records/guests-before";
import { finishAction, recordInstantAction, startAction } from "@/lib/power/records/run-actions";
import type { PowerServices } from "@/lib/power/shutdown/services";
import { shedRun, wouldShed, type ShedCtx } from "./shed-context";
import type { ShedGroup, ShedPlan } from "./shed-plan";
import { isShedGuest } from "./shed-selection";

/** A failed or unanswered call is sent again after 1, 2, 4, then every 5 s (as the shutdown's). */
export function resendAfterMs(failures: number): number {
  return Math.min(5000, 1000 * 2 ** Math.max(0, failures - 1));
}

export type ShedGuestWork = {
  node: string;
  type: GuestType;
  vmid: number;
  /** `stopped` read back; `would` dry-run; `skipped` not shed, `why` says why. */
  outcome?: "stopped" | "would" | "skipped";
  why?: string;
  actionId?: number;
  /** The last shutdown (or force-stop) call that was answered. */
  sentAt?: string;
  forcedAt?: string;
  failures?: number;
  /** A failed call is sent again from this time on. */
  againAt?: string;
};

type GroupState = {
  /** The shed guests were listed (and recorded); `problem` when they could not be. */
  listed?: boolean;
  problem?: string;
  guests: Record<string, ShedGuestWork>;
};
export type ShedState = Record<string, GroupState>;

/**
 * Shuts the shed guests down — those tagged or listed, running on the due nodes, never the
 * console's own — and reads each back until it is seen stopped: Proxmox's
 * `POST …/status/shutdown` with the guest timeout and `forceStop`, a force-stop from the console
 * after the timeout, a call that failed or went unanswered sent again with backoff, until the
 * guest reads `stopped` or the main shutdown takes over (./shed-context.ts). Each shed guest is
 * recorded as running before (power_back_guests, keyed by this run), so the way back — or the
 * restart when mains returns first — starts it again in its startup order.
 *
 * HA-managed guests are not shed: Proxmox would turn a shutdown into HA's requested state
 * `stopped`, and HA stays armed for the rest of the cluster while shedding — the guest is left
 * running and the run says so (take it out of HA, or drop its tag). A guest whose HA state
 * could not be read is left running too: "could not ask" is no evidence to shut it down early.
 *
 * Why not StopClusterGuests itself: that step stops every guest of a cluster but one, after HA
 * was disarmed, and falls back to the nodes' own shutdowns when it cannot list them — the
 * cluster going down. Shedding stops a chosen few while the cluster stays up; it shares that
 * step's API client, its guest-before record and its deadlines, not its "everything" logic.
 */
export const stopShedGuests: Step<PowerServices> = {
  name: "StopShedGuests",
  maxDuration: () => 4 * 3600,
  async visit(ctx) {
    const ready = await shedRun(ctx);
    if (ready.outcome) return ready.outcome;
    const { plan, armed } = ready;
    const state = ctx.context.get<ShedState>("shed:guests") ?? {};
    const apis = new Map<string, Promise<ClusterApi | string>>();
    for (const group of plan.groups) {
      const entry = (state[group.key] ??= { guests: {} });
      if (!entry.listed) await listGroup(ctx, plan, group, entry, apis, armed);
    }
    ctx.context.set("shed:guests", state);
    const all = () => Object.values(state).flatMap((g) => Object.values(g.guests));
    if (!armed) {
      for (const group of plan.groups) {
        for (const work of Object.values(state[group.key]!.guests)) {
          if (work.outcome) continue;
          await wouldShed(ctx, {
            lane: work.node,
            label: `shed ${work.type} ${work.vmid}`,
            request: requestLine(
              group.endpoints[0]!,
              "POST",
              paths.guest(work.node, work.type, work.vmid, "shutdown"),
              shutdownForm(plan),
            ),
            detail: `would shut down ${work.type}/${work.vmid} on ${work.node} after ${plan.afterMinutes} min on battery`,
          });
          work.outcome = "would";
        }
      }
      ctx.context.set("shed:guests", state);
      return advance(summary(all()));
    }
    await watchWithinVisit(ctx.signal, async () => {
      for (const group of plan.groups) {
        await lookAtGroup(ctx, plan, group, state[group.key]!, apis);
      }
      ctx.context.set("shed:guests", state);
      return all().every((w) => w.outcome)
        ? { done: true }
        : { againInMs: GUEST_READ_BACK_POLL_MS };
    });
    ctx.context.set("shed:guests", state);
    const waiting = all().filter((w) => !w.outcome);
    if (waiting.length > 0) {
      return poll(
        0,
        `waiting for ${waiting.map((w) => `${w.type}/${w.vmid} on ${w.node}`).join(", ")} to read stopped`,
      );
    }
    return advance(summary(all()));
  },
};

function summary(all: readonly ShedGuestWork[]): string {
  const count = (o: ShedGuestWork["outcome"]) => all.filter((w) => w.outcome === o).length;
  const skipped = all.filter((w) => w.outcome === "skipped");
  const parts = [
    count("would") > 0 ? `dry-run — ${count("would")} guest(s) would be shed, nothing sent` : null,
    count("stopped") > 0 ? `${count("stopped")} guest(s) shed (read back stopped)` : null,
    skipped.length > 0
      ? `${skipped.length} left running: ${skipped.map((w) => `${w.vmid} (${w.why})`).join("; ")}`
      : null,
  ].filter(Boolean);
  return parts.join("; ") || "no shed guest was running";
}

function shutdownForm(plan: ShedPlan) {
  return { timeout: String(plan.guestTimeoutSeconds), forceStop: "1" };
}

function apiOf(
  ctx: ShedCtx,
  plan: ShedPlan,
  group: ShedGroup,
  apis: Map<string, Promise<ClusterApi | string>>,
): Promise<ClusterApi | string> {
  const known = apis.get(group.key);
  if (known) return known;
  const api = clusterApiOver(ctx.services.db, group.endpoints, {
    timeoutMs: plan.callTimeoutSeconds * 1000,
    onSecret: ctx.services.maskSecret,
  }).then(
    (reach) => reach.api ?? reach.why,
    (error: unknown) => errorMessage(error),
  );
  apis.set(group.key, api);
  return api;
}

/**
 * Lists a group's running shed guests once, with their HA and startup order, and records those
 * it sheds for the way back. A list that cannot be read sheds nothing there (said in the log).
 */
async function listGroup(
  ctx: ShedCtx,
  plan: ShedPlan,
  group: ShedGroup,
  entry: GroupState,
  apis: Map<string, Promise<ClusterApi | string>>,
  armed: boolean,
): Promise<void> {
  entry.listed = true;
  const api = await apiOf(ctx, plan, group, apis);
  try {
    if (typeof api === "string") throw new Error(api);
    const own = plan.consoleGuest;
    const running = (await api.guests()).filter(
      (g): g is typeof g & { type: GuestType } =>
        (g.type === "qemu" || g.type === "lxc") &&
        g.status === "running" &&
        g.template !== 1 &&
        group.nodes.includes(g.node) &&
        !(own && own.node === g.node && own.vmid === g.vmid) &&
        isShedGuest(g, plan.selection),
    );
    const before = await readGuestsBefore(api, running);
    const shed = before.filter((g) => g.haManaged === false);
    for (const g of before) {
      const work: ShedGuestWork = { node: g.node, type: g.type, vmid: g.vmid };
      entry.guests[String(g.vmid)] = work;
      if (g.haManaged === false) continue;
      work.outcome = "skipped";
      work.why =
        g.haManaged === true
          ? "HA manages it: shedding would fight HA's requested state while HA stays armed for the rest; take it out of HA or drop its tag"
          : `its HA state could not be read (${g.problem ?? "unknown"}): not shed on a guess`;
      await recordInstantAction(ctx.services.db, {
        runId: ctx.runId,
        lane: g.node,
        label: `shed ${g.type} ${g.vmid}`,
        request: null,
        outcome: "failed",
        detail: `not shed: ${work.why}`,
      });
      ctx.log(`${g.type}/${g.vmid} on ${g.node}: not shed: ${work.why}`);
    }
    await recordGuestsBefore(
      ctx.services.db,
      {
        runId: ctx.runId,
        dueSince: plan.dueSince,
        clusterId: group.clusterId,
        targetId: group.targetId,
        mode: armed ? "armed" : "dry-run",
      },
      { guests: shed },
    );
    ctx.log(
      `${group.name}: ${shed.length} shed guest(s) running: ${shed.map((g) => `${g.type}/${g.vmid} on ${g.node}`).join(", ") || "none"} (recorded for the way back)`,
    );
  } catch (error) {
    entry.problem = errorMessage(error);
    ctx.log(
      `${group.name}: the shed guests could not be listed (${entry.problem}): nothing is shed there`,
    );
  }
}

/** One look at a group's shed guests: read back, send what is due, force what hangs. */
async function lookAtGroup(
  ctx: ShedCtx,
  plan: ShedPlan,
  group: ShedGroup,
  entry: GroupState,
  apis: Map<string, Promise<ClusterApi | string>>,
): Promise<void> {
  const open = Object.values(entry.guests).filter((w) => !w.outcome);
  if (open.length === 0) return;
  const api = await apiOf(ctx, plan, group, apis);
  if (typeof api === "string") {
    // No member answers now: nothing is concluded; the next look asks again.
    apis.delete(group.key);
    return;
  }
  const { db } = ctx.services;
  // Read back side by side: a guest seen stopped is done.
  await Promise.all(
    open.map(async (work) => {
      if (!work.sentAt && !work.failures) return;
      const status = await api.guestStatus(work).catch(() => "unreadable");
      if (status !== "stopped") return;
      work.outcome = "stopped";
      if (work.actionId) {
        await finishAction(db, work.actionId, { outcome: "ok", detail: "read back: stopped" });
        delete work.actionId;
      }
      ctx.log(`${work.type}/${work.vmid} on ${work.node}: stopped (read back)`);
    }),
  );
  const now = Date.now();
  const pending = open.filter((w) => !w.outcome);
  // Stragglers: past their timeout (and the force-stop margin) after the shutdown: force-stop,
  // and again each margin while they still run.
  for (const work of pending) {
    const since = work.forcedAt ?? work.sentAt;
    const allowed = work.forcedAt
      ? FORCE_STOP_SECONDS
      : plan.guestTimeoutSeconds + FORCE_STOP_SECONDS;
    if (since && now - Date.parse(since) > allowed * 1000) {
      await send(ctx, api, plan, work, "stop");
    }
  }
  const inFlight = pending.filter((w) => w.sentAt).length;
  const due = pending.filter((w) => !w.sentAt && (!w.againAt || Date.parse(w.againAt) <= now));
  await Promise.all(
    due
      .slice(0, Math.max(0, plan.guestParallelism - inFlight))
      .map((work) => send(ctx, api, plan, work, "shutdown")),
  );
}

async function send(
  ctx: ShedCtx,
  api: ClusterApi,
  plan: ShedPlan,
  work: ShedGuestWork,
  action: "shutdown" | "stop",
): Promise<void> {
  const { db } = ctx.services;
  const form = action === "shutdown" ? shutdownForm(plan) : undefined;
  const request = api.line("POST", paths.guest(work.node, work.type, work.vmid, action), form);
  if (work.actionId) {
    await finishAction(db, work.actionId, {
      outcome: "timed-out",
      detail: `still running ${work.forcedAt ? FORCE_STOP_SECONDS : plan.guestTimeoutSeconds} s after its ${work.forcedAt ? "force-stop" : "shutdown"}: force-stopped`,
    });
    delete work.actionId;
  }
  const label = `${action === "shutdown" ? "shed" : "force-stop"} ${work.type} ${work.vmid}`;
  const started = await startAction(db, { runId: ctx.runId, lane: work.node, label, request });
  work.actionId = started.id;
  try {
    await api.guestAction(work, action, form);
    const at = new Date().toISOString();
    if (action === "stop") work.forcedAt = at;
    else work.sentAt = at;
    ctx.log(`${work.type}/${work.vmid} on ${work.node}: ${request}`);
  } catch (error) {
    // Sent again with backoff until the guest reads stopped or the main shutdown takes over.
    work.failures = (work.failures ?? 0) + 1;
    if (action === "shutdown") {
      delete work.sentAt;
      work.againAt = new Date(Date.now() + resendAfterMs(work.failures)).toISOString();
    } else {
      work.forcedAt = new Date(
        Date.now() - FORCE_STOP_SECONDS * 1000 + resendAfterMs(work.failures),
      ).toISOString();
    }
    await started.finish({ outcome: "failed", detail: errorMessage(error) });
    delete work.actionId;
    ctx.log(
      `${work.type}/${work.vmid} on ${work.node}: ${action} FAILED (${errorMessage(error)}); sent again in ${resendAfterMs(work.failures) / 1000} s unless it reads stopped`,
    );
  }
}
