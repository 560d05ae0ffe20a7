import { z } from "zod";
import { eq } from "drizzle-orm";
import { runs } from "@/lib/db/schema";
import { advance, fail, type Step } from "@/lib/pipeline/step";
import { readPowerSettings } from "@/lib/power/config/power-settings-store";
import {
  buildPowerBackPlan,
  type BackHost,
  type PowerBackPlan,
} from "@/lib/power/power-back/back-plan";
import type { GuestWork } from "@/lib/power/power-back/start-guests";
import { guestsRecordedBy } from "@/lib/power/records/guests-before";
import type { PowerServices } from "@/lib/power/shutdown/services";
import type { ShedPlan } from "./shed-plan";
import type { ShedState } from "./stop-shed-guests";

/** What starts a `power-shed-back` run: the shed run whose guests start again, and why now. */
export const ZShedBackInput = z.object({ shedRunId: z.uuid(), why: z.string() });
export type ShedBackInput = z.infer<typeof ZShedBackInput>;

/**
 * Mains came back before the main trigger (issue 30, item 7): exactly the guests the shed run
 * shut down (or, in dry-run, would have) start again at once — their hosts never went down.
 * Freezes a way-back plan of those guests alone on their nodes, marked up, so that StartGuests
 * (lib/power/power-back/start-guests.ts) starts them as the way back does: in startup order,
 * bounded, each read back running; and a feed on battery again stops it as a new outage.
 * Armed only when the shed was armed and the console still is: a guest the shed did not stop
 * is never started.
 */
export const planShedBack: Step<PowerServices> = {
  name: "PlanShedBack",
  maxDuration: () => 60,
  async visit(ctx) {
    const { db } = ctx.services;
    const input = ZShedBackInput.safeParse(ctx.context.get("input"));
    if (!input.success) {
      return fail(
        "This run does not say which shed it undoes; power-shed-back runs are started by the power monitor.",
      );
    }
    const [shed] = await db
      .select({ context: runs.context })
      .from(runs)
      .where(eq(runs.id, input.data.shedRunId));
    const shedPlan = shed?.context.plan as ShedPlan | undefined;
    if (!shedPlan) return fail(`Shed run ${input.data.shedRunId} has no plan: nothing to start.`);
    const state = (shed!.context["shed:guests"] as ShedState | undefined) ?? {};
    const shedIds = new Set(
      Object.values(state)
        .flatMap((g) => Object.values(g.guests))
        .filter((w) => w.outcome === "stopped" || w.outcome === "would")
        .map((w) => w.vmid),
    );
    const settings = await readPowerSettings(db);
    const mode = shedPlan.mode === "armed" && settings.mode === "armed" ? "armed" : "dry-run";
    const recorded = (await guestsRecordedBy(db, [input.data.shedRunId])).filter(
      (g) => g.vmid !== null && shedIds.has(g.vmid),
    );
    const base = buildPowerBackPlan({
      runs: [],
      guests: recorded,
      mode,
      guestParallelism: settings.shutdown.guestParallelism,
      now: new Date(),
    });
    const hosts: BackHost[] = shedPlan.groups.flatMap((group) =>
      group.endpoints.map((endpoint, i) => ({
        targetId: group.targetIds[i]!,
        name: endpoint.nodeName,
        kind: "pve-node" as const,
        hostId: endpoint.hostId,
        endpoint,
        clusterId: group.clusterId,
        monitor: false,
        stage: 0,
      })),
    );
    const plan: PowerBackPlan = {
      ...base,
      hosts,
      feeds: shedPlan.feeds,
      budgetSeconds: 0,
    };
    ctx.context.set("plan", plan);
    // The hosts never went down: StartGuests takes them as up.
    ctx.context.set("back:wait", { up: hosts.map((h) => h.targetId) });
    // Nothing to report from the guests the way back has not started yet.
    ctx.context.set("back:guests", {} satisfies Record<string, GuestWork>);
    ctx.log(`started by the power monitor: ${input.data.why}`);
    ctx.log(`the guests shed by run ${input.data.shedRunId}: ${[...shedIds].join(", ") || "none"}`);
    ctx.log(
      plan.mode === "armed"
        ? "mode: armed — the shed guests are started and read back running"
        : "mode: dry-run — nothing will be sent; every start is recorded as 'would …'",
    );
    return advance(`${plan.guests.length} shed guest(s) to start, ${mode}`);
  },
};
