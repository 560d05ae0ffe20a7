import { and, eq, ne } from "drizzle-orm";
import { runs } from "@/lib/db/schema";
import { advance, poll, type Step } from "@/lib/pipeline/step";
import { abortRun } from "@/lib/runs/abort-run";
import type { HostServices } from "../services";

/** Context key: the runs this step asked to stop, for its result line. */
const ABORTED = "decommission.abortedRuns";

/**
 * Goal: no other run works on the host. A running onboarding is aborted the way an operator
 * aborts it (its current step cleans up: a template build is killed on the host, an apt job
 * stopped), and this step waits until it has really stopped — removing the token while
 * CreateApiToken is creating one would race it.
 */
export const abortActiveRun: Step<HostServices> = {
  name: "AbortActiveRun",
  maxDuration: () => 900,
  async visit(ctx) {
    const { db } = ctx.services;
    const hostId = ctx.hostId;
    if (!hostId) return advance("this run belongs to no host");
    const running = await db
      .select({ id: runs.id, currentStep: runs.currentStep })
      .from(runs)
      .where(and(eq(runs.hostId, hostId), eq(runs.status, "running"), ne(runs.id, ctx.runId)));
    const asked = ctx.context.get<string[]>(ABORTED) ?? [];
    if (running.length === 0) {
      return advance(
        asked.length === 0 ? "no run was running" : `run ${asked.join(", ")} aborted and stopped`,
      );
    }
    for (const run of running) {
      if (asked.includes(run.id)) continue;
      // A run that ended between the select and the abort is not an error here.
      await abortRun(db, { runId: run.id, actor: "decommission" }).catch(() => undefined);
      ctx.log(`asked run ${run.id} (at ${run.currentStep}) to abort`);
      asked.push(run.id);
    }
    ctx.context.set(ABORTED, asked);
    const first = running[0]!;
    return poll(1, `waiting for run ${first.id.slice(0, 8)} to stop (at ${first.currentStep})`);
  },
};
