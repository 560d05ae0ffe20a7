import { errorMessage } from "@/lib/pipeline/engine";
import { advance, poll, type Step } from "@/lib/pipeline/step";
import { powerOnHost } from "@/lib/power-controllers/power-on-host";
import {
  describe,
  getPowerControllerView,
  getTargetPowerControllerView,
} from "@/lib/power-controllers/store";
import { powerOnTarget } from "@/lib/power-controllers/target-controller";
import { startAction } from "@/lib/power/records/run-actions";
import type { PowerServices } from "@/lib/power/shutdown/services";
import type { BackHost } from "./back-plan";
import { probeTarget } from "@/lib/power/targets/shutdown-call";
import { backRun, reportBack, waitingFor, wouldBack, type BackCtx } from "./back-context";

/** What happened to each host's power-on, by target id. */
export type PowerOnState = Record<
  string,
  "powered-on" | "already-on" | "would" | "no-controller" | "failed"
>;

export const NO_CONTROLLER = "no power controller: power it on by hand";

/** How long one visit goes on powering hosts on before it hands back to the engine. */
const VISIT_MS = 10_000;

/**
 * How long a host woken through its cluster (Proxmox's wakeonlan, sent by another member) waits
 * for a member of its cluster to answer: a member powered on just before is still booting.
 * Past it the wake is tried anyway (a member the way back does not bring back may be up).
 */
export const MEMBER_WAIT_SECONDS = 600;
const MEMBER_PROBE_MS = 2000;
/** How soon a host waiting for a member is looked at again. */
const MEMBER_POLL_SECONDS = 1;

/**
 * Powers the hosts on through their controllers, one after another in the plan's order
 * (per cluster the Ceph monitor nodes first; standalone hosts in reverse stage order; backup
 * servers last), all in one visit. A host without a controller, or whose controller fails, is
 * reported and the next one follows: one dead BMC must not keep the rest of the fleet dark.
 * Before each host the feeds are asked again: a new outage ends the run before anything more is
 * powered on.
 */
export const powerOnHosts: Step<PowerServices> = {
  name: "PowerOnHosts",
  maxDuration: () => 1800,
  async visit(ctx) {
    const ready = await backRun(ctx);
    if (ready.outcome) return ready.outcome;
    const { plan, armed } = ready;
    const state = ctx.context.get<PowerOnState>("back:power") ?? {};
    // One host after another within the visit (each host's boot starts with its request: a hand-
    // over through the engine between two hosts only made the later ones boot later), the feeds
    // and the mode asked again before each next one.
    let sending = armed;
    const until = Date.now() + VISIT_MS;
    // Hosts woken through their cluster whose members do not answer yet: passed over this visit.
    const waiting: BackHost[] = [];
    for (;;) {
      const next = plan.hosts.find((h) => !state[h.targetId] && !waiting.includes(h));
      if (!next) break;
      if (sending && (await waitsForMember(ctx, plan.hosts, next))) {
        waiting.push(next);
        continue;
      }
      state[next.targetId] = await powerOn(ctx, next, sending);
      ctx.context.set("back:power", state);
      const left = plan.hosts.filter((h) => !state[h.targetId]).length;
      if (left === 0) break;
      // What went out is committed at the end of a visit: slow controllers hand back now and then.
      if (ctx.signal.aborted || Date.now() > until)
        return poll(
          0,
          `powering on the hosts: ${plan.hosts.length - left} of ${plan.hosts.length}`,
        );
      const again = await backRun(ctx);
      if (again.outcome) return again.outcome;
      sending = again.armed;
    }
    if (waiting.length > 0) {
      return poll(
        MEMBER_POLL_SECONDS,
        waitingFor(
          ctx,
          "PowerOnHosts",
          `a member of the cluster to answer its API, to wake ${waiting.map((h) => h.name).join(", ")} through it (Wake-on-LAN via a cluster member; up to ${MEMBER_WAIT_SECONDS} s)`,
        ),
      );
    }
    const count = (what: PowerOnState[string]) =>
      Object.values(state).filter((s) => s === what).length;
    const parts = [
      [count("powered-on"), "powered on"],
      [count("already-on"), "already on"],
      [count("would"), "would be powered on (dry-run: nothing sent)"],
      [count("no-controller"), "without a power controller"],
      [count("failed"), "FAILED"],
    ] as const;
    return advance(
      parts
        .filter(([n]) => n > 0)
        .map(([n, what]) => `${n} ${what}`)
        .join(", "),
    );
  },
};

async function powerOn(
  ctx: BackCtx,
  host: BackHost,
  armed: boolean,
): Promise<PowerOnState[string]> {
  const { db } = ctx.services;
  const lane = host.endpoint?.nodeName ?? host.name;
  // A host's controller hangs on its host, a backup server's on its power target.
  const view = host.hostId
    ? await getPowerControllerView(db, host.hostId)
    : host.kind === "pbs"
      ? await getTargetPowerControllerView(db, host.targetId)
      : null;
  if (!view) {
    const message = `${host.name}: ${NO_CONTROLLER}`;
    const action = await startAction(db, { runId: ctx.runId, lane, label: `power on ${lane}` });
    await action.finish({ outcome: "failed", detail: NO_CONTROLLER });
    await reportBack(ctx, {
      severity: "critical",
      kind: "power_back.host_failed",
      message,
      targetId: host.targetId,
      data: { host: host.name, problem: "no-controller" },
    });
    return "no-controller";
  }
  const where = describe(view);
  if (!armed) {
    await wouldBack(ctx, { lane, label: `power on ${lane}`, request: where });
    return "would";
  }
  const action = await startAction(db, {
    runId: ctx.runId,
    lane,
    label: `power on ${lane}`,
    request: where,
  });
  try {
    const actor = `power-back run ${ctx.runId}`;
    const outcome = host.hostId
      ? await powerOnHost(db, { hostId: host.hostId, actor })
      : await powerOnTarget(db, { targetId: host.targetId, actor });
    await action.finish({ outcome: "ok", detail: outcome.message });
    ctx.log(`${host.name}: ${outcome.message}`);
    return outcome.result === "already-on" ? "already-on" : "powered-on";
  } catch (error) {
    await action.finish({ outcome: "failed", detail: errorMessage(error) });
    await reportBack(ctx, {
      severity: "critical",
      kind: "power_back.host_failed",
      message: `${host.name}: not powered on: ${errorMessage(error)}; the others go on`,
      targetId: host.targetId,
      data: { host: host.name, problem: "controller" },
    });
    return "failed";
  }
}

/**
 * Whether `host` is woken through its cluster and must wait: none of the other members the way
 * back knows answers its API yet (the wake has to come from one that is up), and the step has
 * not waited MEMBER_WAIT_SECONDS yet. Any other controller never waits.
 */
async function waitsForMember(ctx: BackCtx, hosts: readonly BackHost[], host: BackHost) {
  if (!host.hostId || !host.clusterId) return false;
  const view = await getPowerControllerView(ctx.services.db, host.hostId);
  if (view?.kind !== "pve-wol") return false;
  if (ctx.elapsedSeconds >= MEMBER_WAIT_SECONDS) return false;
  const members = hosts.filter(
    (h) => h.clusterId === host.clusterId && h.targetId !== host.targetId && h.endpoint,
  );
  // No other member in the way back: the wake is tried at once (the controller asks every
  // member the console knows).
  if (members.length === 0) return false;
  const probes = await Promise.all(members.map((h) => probeTarget(h.endpoint!, MEMBER_PROBE_MS)));
  return !probes.some((p) => p.answers);
}
