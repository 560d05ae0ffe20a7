import { z } from "zod";
import { NEW_OUTAGE, SKIPPED_DRY_RUN } from "@/lib/power/power-back/back-context";
import { isDrillWayBack, ZPowerBackInput } from "@/lib/power/power-back/back-plan";
import type { PowerRunVerdict, PowerStepVerdict } from "./power-run-verdict";

/*
 * What a power-back run (the way back, issue 30) did, in one line an operator reads at 3 a.m. —
 * decided from what the run recorded: its frozen plan, what each step wrote back into the run's
 * context after acting (a power-on's outcome, the APIs that answered, the guests read `running`),
 * its actions' outcomes and details, and who stopped it. Never from what a step set out to do:
 * a host is "back" when its API answered, a guest "running" when its status read so. Pure, so
 * every case is tested (power-back-verdict.test.ts). The shutdown's is ./power-run-verdict.ts.
 */

export type PowerBackFacts = {
  status: "running" | "succeeded" | "failed";
  failureReason: string | null;
  failedStep: string | null;
  currentStep: string;
  /** The run's phase line: what the running step waits for now. */
  phase: string | null;
  /** The run's context as stored; read leniently (an older run may lack parts). */
  context: Record<string, unknown>;
  actions: readonly {
    lane: string;
    label: string;
    outcome: string | null;
    detail: string | null;
  }[];
  /** Who asked for the abort, when one was asked (the power monitor names the feed). */
  abortedBy: string | null;
};

const ABORT_REASON = "aborted by operator";
/** The power monitor's abort of a way back when a feed is on battery again (power-back-watch.ts). */
const MAINS_LOST = /mains lost again on (.+?)(?::|$)/;

const ZPlan = z.object({
  mode: z.enum(["armed", "dry-run"]),
  hosts: z.array(
    z.object({
      targetId: z.string(),
      name: z.string(),
      endpoint: z.object({ nodeName: z.string() }).nullish(),
    }),
  ),
  clusters: z
    .array(
      z.object({
        clusterId: z.string(),
        name: z.string(),
        cephFlags: z.array(z.string()).catch([]),
        haDisarmed: z.boolean().catch(false),
      }),
    )
    .catch([]),
  guests: z.array(z.object({ vmid: z.number() })).catch([]),
});
type Plan = z.infer<typeof ZPlan>;

const ZPower = z
  .record(z.string(), z.enum(["powered-on", "already-on", "would", "no-controller", "failed"]))
  .catch({});
const ZUp = z.object({ up: z.array(z.string()).catch([]) }).catch({ up: [] });
const ZGuests = z
  .record(z.string(), z.object({ outcome: z.string().optional() }).catch({}))
  .catch({});
const ZRestore = z
  .record(
    z.string(),
    z
      .object({
        items: z
          .array(z.object({ what: z.string(), outcome: z.string(), detail: z.string() }))
          .optional(),
      })
      .catch({}),
  )
  .catch({});

type Read = {
  plan: Plan | null;
  power: z.infer<typeof ZPower>;
  up: Set<string>;
  guests: z.infer<typeof ZGuests>;
  restore: z.infer<typeof ZRestore>;
};

function read(facts: PowerBackFacts): Read {
  const plan = ZPlan.safeParse(facts.context.plan);
  return {
    plan: plan.success ? plan.data : null,
    power: ZPower.parse(facts.context["back:power"] ?? {}),
    up: new Set(ZUp.parse(facts.context["back:wait"] ?? {}).up),
    guests: ZGuests.parse(facts.context["back:guests"] ?? {}),
    restore: ZRestore.parse(facts.context["back:restore"] ?? {}),
  };
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

function firstLine(text: string | null | undefined): string {
  return (
    (text ?? "")
      .split("\n")
      .find((line) => line.trim() !== "")
      ?.trim() ?? ""
  );
}

function list(names: readonly string[]): string {
  if (names.length <= 1) return names.join("");
  return `${names.slice(0, -1).join(", ")} and ${names.at(-1)}`;
}

/** Where the way back stands: hosts whose API answered, guests read running. */
function progress(r: Read, plan: Plan): string {
  const back = plan.hosts.filter((h) => r.up.has(h.targetId)).length;
  const running = plan.guests.filter((g) => r.guests[g.vmid]?.outcome === "running").length;
  const guests =
    plan.guests.length === 0
      ? "no guest to start"
      : `${running} of ${plural(plan.guests.length, "guest")} running`;
  return `${back} of ${plural(plan.hosts.length, "host")} back, ${guests}`;
}

/**
 * What did not come back, each with what to do: a host without a controller or whose
 * controller failed (its action's detail says how), one powered on whose API never answered,
 * a guest not started, a cluster not restored.
 */
function problems(facts: PowerBackFacts, r: Read, plan: Plan): string[] {
  const out: string[] = [];
  for (const host of plan.hosts) {
    const state = r.power[host.targetId];
    const lane = host.endpoint?.nodeName ?? host.name;
    if (state === "no-controller") {
      out.push(`${host.name} has no power controller — power it on by hand`);
    } else if (state === "failed") {
      const action = facts.actions.find(
        (a) => a.lane === lane && a.label === `power on ${lane}` && a.outcome === "failed",
      );
      // The controller's own words, named after the host once ("pve2 was not powered on: …").
      const why = firstLine(action?.detail).replace(/\.$/, "") || "its controller failed";
      out.push(`${why.startsWith(host.name) ? why : `${host.name}: ${why}`} — power it on by hand`);
    } else if (
      (state === "powered-on" || state === "already-on") &&
      host.endpoint &&
      !r.up.has(host.targetId) &&
      facts.status !== "running"
    ) {
      out.push(`${host.name} was powered on but its API never answered`);
    }
  }
  const notStarted = plan.guests.filter((g) => r.guests[g.vmid]?.outcome === "failed");
  if (notStarted.length > 0) {
    out.push(
      `${notStarted.length === 1 ? "guest" : "guests"} ${notStarted.map((g) => g.vmid).join(", ")} not started`,
    );
  }
  for (const cluster of plan.clusters) {
    const failed = (r.restore[cluster.clusterId]?.items ?? []).filter(
      (i) => i.outcome === "failed",
    );
    if (failed.length > 0) {
      out.push(
        `${cluster.name}: ${failed.map((i) => i.what).join(" and ")} not restored — restore it on /power`,
      );
    }
  }
  return out;
}

/**
 * What a dry-run recorded it would do: the hosts PowerOnHosts recorded as "would" (by target:
 * standalone nodes often share a node name, so an action's lane cannot tell them apart), the
 * cluster restores and guest starts from its would-do actions.
 */
function wouldDo(facts: PowerBackFacts, r: Read, plan: Plan): string {
  const would = facts.actions.filter((a) => a.outcome === "would-do");
  const powerOn = plan.hosts.filter((h) => r.power[h.targetId] === "would").map((h) => h.name);
  const starts = would.filter((a) => a.label.startsWith("start ")).length;
  const restores = would.filter((a) => a.label === "clear Ceph flags" || a.label === "re-arm HA");
  const parts = [
    powerOn.length > 0 ? `would power on ${list(powerOn)}` : "would power nothing on",
    ...(restores.length > 0 ? [`${restores.map((a) => a.label).join(" and ")}`] : []),
    ...(starts > 0 ? [`start ${plural(starts, "guest")}`] : []),
  ];
  return parts.join(", ");
}

function stepWords(step: string): string {
  const words: Record<string, string> = {
    PlanPowerBack: "planning the way back",
    PowerOnHosts: "powering on the hosts",
    WaitForNodes: "waiting for the nodes",
    RestoreClusters: "restoring the clusters",
    StartGuests: "starting the guests",
    ReportPowerBack: "reporting",
  };
  return words[step] ?? step;
}

/**
 * The way back's one line, e.g. "bringing back: waiting for quorum of c1: 2 of 3 online",
 * "3 of 3 hosts back, 5 of 5 guests running", "dry-run: would power on pve1, pve2 and pve3;
 * nothing sent", "stopped: mains lost again on ups1 — 1 of 3 hosts back, …".
 */
export function describePowerBack(facts: PowerBackFacts): PowerRunVerdict {
  const verdict = describeWayBack(facts);
  // A drill's way back says so in its one line: it never reads as the outage's way back.
  return isDrillWayBack(facts.context.input)
    ? { ...verdict, text: `drill — ${verdict.text}` }
    : verdict;
}

function describeWayBack(facts: PowerBackFacts): PowerRunVerdict {
  const r = read(facts);
  const plan = r.plan;
  const dry = plan?.mode === "dry-run";
  const step = facts.failedStep ?? facts.currentStep;
  const trouble = plan ? problems(facts, r, plan) : [];
  const handWork = trouble.length > 0 ? `; ${trouble.join("; ")}` : "";

  if (facts.status === "running") {
    if (!plan) return { tone: "running", text: "bringing back: planning the way back" };
    if (dry)
      return {
        tone: "dry-run",
        text: `dry-run in progress: ${wouldDo(facts, r, plan)}; nothing sent${handWork}`,
      };
    // The one thing it waits for, as the running step says it on the phase line.
    return {
      tone: "running",
      text: `bringing back: ${facts.phase ?? stepWords(facts.currentStep)}`,
    };
  }

  const mainsLost =
    facts.context.outcome === NEW_OUTAGE
      ? MAINS_LOST.exec(facts.failureReason ?? "")
      : facts.failureReason === ABORT_REASON
        ? MAINS_LOST.exec(facts.abortedBy ?? "")
        : null;
  const where = plan ? (dry ? "dry-run, nothing sent" : progress(r, plan)) : "nothing planned yet";
  if (facts.status === "failed" && (mainsLost || facts.context.outcome === NEW_OUTAGE)) {
    const feeds = mainsLost ? ` on ${mainsLost[1]}` : "";
    return {
      tone: "stopped",
      text: `stopped: mains lost again${feeds} — ${where}; nothing more is powered on or started`,
    };
  }
  if (facts.status === "failed" && facts.failureReason === ABORT_REASON) {
    const by = facts.abortedBy ? ` by ${facts.abortedBy}` : "";
    return { tone: "aborted", text: `aborted during ${step}${by}: ${where}${handWork}` };
  }
  if (facts.status === "failed") {
    const reason = firstLine(facts.failureReason) || "no reason recorded";
    return { tone: "failed", text: `${dry ? "dry-run " : ""}failed at ${step}: ${reason}` };
  }
  // Succeeded.
  if (!plan) return { tone: "failed", text: "finished without a readable plan" };
  if (dry)
    return {
      tone: "dry-run",
      text: `dry-run: ${wouldDo(facts, r, plan)}; nothing sent${handWork}`,
    };
  if (trouble.length > 0) {
    return { tone: "failed", text: `failed: ${trouble.join("; ")}; ${progress(r, plan)}` };
  }
  return { tone: "ok", text: progress(r, plan) };
}

/**
 * Steps of the way back that the engine calls done but that did less than their name says:
 * skipped (with why) or dry-run (recorded what they would do). Others read as the engine says.
 */
export function powerBackStepVerdicts(
  facts: PowerBackFacts,
  steps: readonly { name: string; state: string }[],
): Record<string, PowerStepVerdict> {
  const r = read(facts);
  const plan = r.plan;
  if (!plan) return {};
  const dry = plan.mode === "dry-run";
  const would = (label: (l: string) => boolean) =>
    facts.actions.filter((a) => a.outcome === "would-do" && label(a.label)).length;
  const wouldPowerOn = would((l) => l.startsWith("power on "));
  const poweredOn = Object.values(r.power).filter(
    (s) => s === "powered-on" || s === "already-on",
  ).length;
  const restorable = plan.clusters.filter((c) => c.cephFlags.length > 0 || c.haDisarmed);

  const verdict: Record<string, () => PowerStepVerdict | null> = {
    PowerOnHosts: () =>
      !dry
        ? null
        : wouldPowerOn === 0
          ? {
              state: "skipped",
              note: "skipped — no host has a power controller: power them on by hand",
            }
          : {
              state: "dry-run",
              note: `dry-run — ${plural(wouldPowerOn, "power-on")} would have been sent, nothing sent`,
            },
    WaitForNodes: () =>
      dry
        ? { state: "skipped", note: SKIPPED_DRY_RUN }
        : poweredOn === 0
          ? { state: "skipped", note: "skipped — nothing was powered on" }
          : null,
    RestoreClusters: () =>
      restorable.length === 0
        ? {
            state: "skipped",
            note:
              plan.clusters.length === 0
                ? "skipped — no cluster"
                : "skipped — no Ceph flag set and HA armed",
          }
        : dry
          ? { state: "dry-run", note: "dry-run — recorded what it would do, nothing sent" }
          : null,
    StartGuests: () =>
      plan.guests.length === 0
        ? { state: "skipped", note: "skipped — no guest was running before the outage" }
        : dry
          ? {
              state: "dry-run",
              note: `dry-run — ${plural(
                would((l) => l.startsWith("start ")),
                "guest",
              )} would have been started, nothing sent`,
            }
          : null,
  };
  const out: Record<string, PowerStepVerdict> = {};
  for (const step of steps) {
    if (step.state !== "done") continue;
    const v = verdict[step.name]?.();
    if (v) out[step.name] = v;
  }
  return out;
}

/** Who started a way back, as its list and card say it. */
export type PowerBackOrigin =
  | { kind: "way-back"; by: "admin"; name: string }
  | { kind: "way-back"; by: "monitor"; why: string }
  /** The way back of a drill: never an outage's. */
  | { kind: "drill-way-back"; by: string; live: boolean; drillRunId: string }
  | { kind: "unknown" };

export function powerBackOriginOf(context: Record<string, unknown>): PowerBackOrigin {
  const input = ZPowerBackInput.safeParse(context.input);
  if (!input.success) return { kind: "unknown" };
  const by = input.data.by;
  if (input.data.drill) {
    return {
      kind: "drill-way-back",
      by: by.kind === "admin" ? by.name : "the power monitor",
      live: input.data.drill.live,
      drillRunId: input.data.shutdownRunIds[0]!,
    };
  }
  return by.kind === "admin"
    ? { kind: "way-back", by: "admin", name: by.name }
    : { kind: "way-back", by: "monitor", why: by.why };
}
