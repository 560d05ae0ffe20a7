import { and, desc, eq, gt } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { runs } from "@/lib/db/schema";
import { readPowerSettings } from "@/lib/power/config/power-settings-store";
import type { ShedSettings } from "@/lib/power/config/settings";
import type { ShedBackInput } from "@/lib/power/shed/plan-shed-back";
import type { ShedPlan } from "@/lib/power/shed/shed-plan";
import type { ShedGuestWork, ShedState } from "@/lib/power/shed/stop-shed-guests";
import { POWER_SHED, POWER_SHED_BACK } from "@/lib/power/shed-pipeline/pipeline";
import type { PowerRunVerdict } from "./power-run-verdict";

export type ShedGuestView = {
  vmid: number;
  type: "qemu" | "lxc";
  node: string;
  /** `shed`: read back stopped; `would`: dry-run; `left-running`: not shed (`why`); `stopping`: under way; `not-stopped`: the shed ended before it read stopped. */
  state: "shed" | "would" | "left-running" | "stopping" | "not-stopped";
  why: string | null;
};

export type ShedRestartView = {
  runId: string;
  status: "running" | "succeeded" | "failed";
  mode: string | null;
  running: number[];
  notStarted: number[];
};

export type ShedRunView = {
  runId: string;
  status: "running" | "succeeded" | "failed";
  startedAt: string;
  mode: string | null;
  afterMinutes: number | null;
  phase: string | null;
  failureReason: string | null;
  /** Why it ended before every guest read stopped: the main trigger, or mains back. */
  ended: "main-trigger" | "mains-back" | null;
  guests: ShedGuestView[];
  /** Clusters or hosts whose guests could not be listed: nothing was shed there. */
  unlisted: { name: string; why: string }[];
  /** Mains came back before the main trigger: the run that starts the shed guests again. */
  restart: ShedRestartView | null;
  verdict: PowerRunVerdict;
};

export type ShedView = { settings: ShedSettings; latest: ShedRunView | null };

/** Who started a shed or its restart (the monitor, always), as the runs list says it. */
export type ShedOrigin = { kind: "shed"; why: string } | { kind: "shed-back"; why: string };

export function shedOriginOf(pipeline: string, context: Record<string, unknown>): ShedOrigin {
  const why = (context.input as { why?: unknown } | undefined)?.why;
  return {
    kind: pipeline === POWER_SHED_BACK ? "shed-back" : "shed",
    why: typeof why === "string" ? why : "the power monitor",
  };
}

type RunRow = Pick<
  typeof runs.$inferSelect,
  "id" | "status" | "createdAt" | "phase" | "failureReason" | "context"
>;

type Facts = Omit<ShedRunView, "verdict">;

const ids = (guests: readonly ShedGuestView[], state: ShedGuestView["state"]) =>
  guests.filter((g) => g.state === state).map((g) => g.vmid);

/**
 * The shed's one line, from what the run recorded (never from what it set out to do): green only
 * when every guest it set out to shed read back stopped and nothing was left out.
 */
export function describeShed(facts: Facts): PowerRunVerdict {
  const after = facts.afterMinutes === null ? "" : ` after ${facts.afterMinutes} min on battery`;
  const left = facts.guests.filter((g) => g.state === "left-running");
  const tail = [
    left.length > 0 ? `left running: ${left.map((g) => `${g.vmid} (${g.why})`).join("; ")}` : null,
    facts.unlisted.length > 0
      ? `could not list the guests of ${facts.unlisted.map((u) => `${u.name} (${u.why})`).join("; ")}`
      : null,
    ids(facts.guests, "not-stopped").length > 0
      ? `not read stopped: ${ids(facts.guests, "not-stopped").join(", ")}`
      : null,
    facts.ended === "main-trigger"
      ? "the main trigger fired: the shutdown run took over; the way back starts the shed guests"
      : null,
    restartLine(facts.restart),
  ].filter((s): s is string => s !== null);
  const more = tail.length > 0 ? `; ${tail.join("; ")}` : "";
  if (facts.status === "failed") {
    return { tone: "failed", text: `failed: ${facts.failureReason ?? "unknown"}${more}` };
  }
  if (facts.status === "running") {
    return {
      tone: "running",
      text: `shedding${after}: ${facts.phase ?? "planning"}`,
    };
  }
  if (facts.mode !== "armed") {
    const would = ids(facts.guests, "would");
    return {
      tone: "dry-run",
      text: `dry-run: would shed ${would.join(", ") || "no guest"}${after}; nothing sent${more}`,
    };
  }
  const shed = ids(facts.guests, "shed");
  // HA-managed guests left running are said in the line, by design not a failure; a guest the
  // shed did not see stopped is one only when nothing else took it over (the main shutdown).
  const clean =
    facts.unlisted.length === 0 &&
    (ids(facts.guests, "not-stopped").length === 0 || facts.ended === "main-trigger");
  return {
    tone: clean && facts.restart?.status !== "failed" ? "ok" : "failed",
    text: `shed ${shed.join(", ") || "no guest"}${after} (each read back stopped)${more}`,
  };
}

function restartLine(restart: ShedRestartView | null): string | null {
  if (!restart) return null;
  const total = restart.running.length + restart.notStarted.length;
  if (restart.status === "running")
    return "mains back before the main trigger: starting them again";
  if (restart.status === "failed")
    return "mains back: starting them again FAILED — start them by hand";
  if (restart.mode !== "armed") return "mains back: they would start again (dry-run)";
  return `mains back before the main trigger: ${restart.running.length} of ${total} running again${restart.notStarted.length > 0 ? `; NOT started: ${restart.notStarted.join(", ")}` : ""}`;
}

function guestView(work: ShedGuestWork, runEnded: boolean): ShedGuestView {
  const state: ShedGuestView["state"] =
    work.outcome === "stopped"
      ? "shed"
      : work.outcome === "would"
        ? "would"
        : work.outcome === "skipped"
          ? "left-running"
          : runEnded
            ? "not-stopped"
            : "stopping";
  return { vmid: work.vmid, type: work.type, node: work.node, state, why: work.why ?? null };
}

/** The shed settings, and the latest shed run of the last 7 days with its restart, if any. */
export async function shedPageView(db: Pick<Database, "select">): Promise<ShedView> {
  const settings = (await readPowerSettings(db)).shed;
  const since = new Date(Date.now() - 7 * 24 * 3600 * 1000);
  const [row] = await db
    .select()
    .from(runs)
    .where(and(eq(runs.pipeline, POWER_SHED), gt(runs.createdAt, since)))
    .orderBy(desc(runs.createdAt), desc(runs.id))
    .limit(1);
  if (!row) return { settings, latest: null };
  const restarts = await db
    .select({ id: runs.id, status: runs.status, context: runs.context })
    .from(runs)
    .where(and(eq(runs.pipeline, POWER_SHED_BACK), gt(runs.createdAt, row.createdAt)))
    .orderBy(desc(runs.createdAt), desc(runs.id));
  const restartRow = restarts.find(
    (r) => (r.context.input as ShedBackInput | undefined)?.shedRunId === row.id,
  );
  const facts = shedFacts(row, restartRow ? restartOf(restartRow) : null);
  return { settings, latest: { ...facts, verdict: describeShed(facts) } };
}

function restartOf(row: Pick<RunRow, "id" | "status" | "context">): ShedRestartView {
  const works =
    (row.context["back:guests"] as Record<string, { outcome?: string }> | undefined) ?? {};
  const entries = Object.entries(works);
  return {
    runId: row.id,
    status: row.status,
    mode: (row.context.plan as { mode?: string } | undefined)?.mode ?? null,
    running: entries.filter(([, w]) => w.outcome === "running").map(([id]) => Number(id)),
    notStarted: entries.filter(([, w]) => w.outcome === "failed").map(([id]) => Number(id)),
  };
}

/** What a shed run recorded, for its one line. */
function shedFacts(row: RunRow, restart: ShedRestartView | null): Facts {
  const plan = row.context.plan as ShedPlan | undefined;
  const state = (row.context["shed:guests"] as ShedState | undefined) ?? {};
  const ended = row.status !== "running";
  const outcome = row.context.outcome;
  return {
    runId: row.id,
    status: row.status,
    startedAt: row.createdAt.toISOString(),
    mode: plan?.mode ?? null,
    afterMinutes: plan?.afterMinutes ?? null,
    phase: row.phase,
    failureReason: row.failureReason,
    ended: outcome === "main-trigger" || outcome === "mains-back" ? outcome : null,
    guests: Object.values(state)
      .flatMap((g) => Object.values(g.guests))
      .map((w) => guestView(w, ended))
      .sort((a, b) => a.vmid - b.vmid),
    unlisted: (plan?.groups ?? []).flatMap((g) =>
      state[g.key]?.problem ? [{ name: g.name, why: state[g.key]!.problem! }] : [],
    ),
    restart,
  };
}

/**
 * The one line of a shed run or of its restart, for the runs list and the timeline (a restart
 * stands on its own there: "mains back before the main trigger: 2 of 2 running again").
 */
export function shedRunVerdict(pipeline: string, row: RunRow): PowerRunVerdict {
  if (pipeline !== POWER_SHED_BACK) return describeShed(shedFacts(row, null));
  if (row.status === "failed") {
    return { tone: "failed", text: `failed: ${row.failureReason ?? "unknown"}` };
  }
  if (row.status === "running") {
    return { tone: "running", text: `starting the shed guests again: ${row.phase ?? "planning"}` };
  }
  const line = restartLine(restartOf(row))!;
  const restart = restartOf(row);
  return {
    tone: restart.mode !== "armed" ? "dry-run" : restart.notStarted.length > 0 ? "failed" : "ok",
    text: restart.mode !== "armed" ? `dry-run: ${line}` : line,
  };
}
