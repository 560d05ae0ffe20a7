import type { UpsCard } from "@/lib/power/queries/ups-cards";
import type { ShutdownRunView } from "@/lib/power/queries/shutdown-run";
import { describeAnswer } from "./api";
import type { PowerFleet } from "./power-fleet";
import type { SoakContext } from "./soak-context";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Long enough for a worker kill (the lease moves in ~7 s) or a Postgres pause and restart. */
export const POWER_WAIT_MS = 90_000;

/** What the power load asks the console, as an operator and an admin would (the JSON API). */
export function powerConsole(ctx: SoakContext, fleet: PowerFleet) {
  /** The lab UPS's card as the console shows it; null while it does not answer. */
  const card = async (): Promise<UpsCard | null> => {
    const answer = await ctx.api.get("/api/power");
    if (answer.status !== 200) return null;
    const { ups } = answer.body as { ups: UpsCard[] };
    return ups.find((c) => c.id === fleet.upsId) ?? null;
  };

  /** The latest power-shutdown run; undefined while the console does not answer. */
  const latestRun = async (): Promise<ShutdownRunView["run"] | null | undefined> => {
    const answer = await ctx.api.get("/api/power/shutdown-run");
    if (answer.status !== 200) return undefined;
    return (answer.body as { shutdown: ShutdownRunView | null }).shutdown?.run ?? null;
  };

  /** Asks `check` every 500 ms until it holds or `ms` passed; whether it held. */
  const until = async (check: () => Promise<boolean>, ms = POWER_WAIT_MS): Promise<boolean> => {
    const deadline = Date.now() + ms;
    for (;;) {
      if (await check()) return true;
      if (Date.now() > deadline) return false;
      await sleep(500);
    }
  };

  const mode = async (): Promise<"armed" | "dry-run" | null> => {
    const answer = await ctx.api.insist("GET", "/api/power/mode", undefined, POWER_WAIT_MS);
    return answer.status === 200 ? (answer.body as { mode: "armed" | "dry-run" }).mode : null;
  };

  return {
    card,
    latestRun,
    until,
    /** A reading on mains the console took after `since` (its monitor saw mains back). */
    onMainsSince: (since: number) =>
      until(async () => {
        const now = await card();
        return (
          now?.condition === "on-mains" &&
          now.lastReading !== null &&
          Date.parse(now.lastReading.at) > since
        );
      }),
    /** No shutdown run is running (the latest one ended, or there is none). */
    noRunRunning: () =>
      until(async () => {
        const run = await latestRun();
        return run !== undefined && run?.status !== "running";
      }),
    /** The first shutdown run after `beforeId` once it ended; null if none did in time. */
    async newRunEnded(beforeId: string | undefined): Promise<ShutdownRunView["run"] | null> {
      let ended: ShutdownRunView["run"] | null = null;
      await until(async () => {
        const run = await latestRun();
        if (run && run.id !== beforeId && run.status !== "running") ended = run;
        return ended !== null;
      });
      return ended;
    },
    /** The console latched a trigger on the lab UPS. */
    latched: (ms?: number) => until(async () => (await card())?.latch != null, ms),
    /**
     * An admin releases the latch (power is back and they do not want to wait 5 min), until the
     * card shows none; a 409 says there was none to release.
     */
    async releaseLatch(): Promise<boolean> {
      return until(async () => {
        const now = await card();
        if (now === null) return false;
        if (now.latch === null) return true;
        await ctx.adminApi.post(`/api/power/ups/${fleet.upsId}/release-latch`);
        return false;
      });
    },
    /**
     * Arms (confirming the targets the plan lists, as the arming dialog does) or disarms, as an
     * admin; nothing when the mode already is `wanted`. Returns what went wrong, or null.
     */
    async setMode(wanted: "armed" | "dry-run"): Promise<string | null> {
      const now = await mode();
      if (now === null) return "GET /api/power/mode did not answer";
      if (now === wanted) return null;
      let body: Record<string, unknown> = { mode: wanted };
      if (wanted === "armed") {
        const plan = await ctx.adminApi.insist("GET", "/api/power/plan", undefined, POWER_WAIT_MS);
        if (plan.status !== 200) return `GET /api/power/plan: ${describeAnswer(plan)}`;
        const { armingTargets } = plan.body as { armingTargets: { id: string }[] };
        body = { mode: "armed", confirmedTargetIds: armingTargets.map((t) => t.id) };
      }
      // A 503 changed nothing: asked again for as long as a database restart may take.
      const answer = await ctx.adminApi.insist("POST", "/api/power/mode", body, POWER_WAIT_MS);
      return answer.status === 200 ? null : `POST /api/power/mode: ${describeAnswer(answer)}`;
    },
  };
}

export type PowerConsole = ReturnType<typeof powerConsole>;
