import { inArray } from "drizzle-orm";
import { runs } from "@/lib/db/schema";
import { advance, fail, type Step } from "@/lib/pipeline/step";
import { readPowerSettings } from "@/lib/power/config/power-settings-store";
import { endOutageLatches } from "@/lib/power/records/end-outage-latches";
import { guestsRecordedBy } from "@/lib/power/records/guests-before";
import type { PowerServices } from "@/lib/power/shutdown/services";
import { planModeOf } from "@/lib/power/shutdown/drill-mark";
import { buildPowerBackPlan, ZPowerBackInput } from "./back-plan";
import { reportBack } from "./back-context";
import { startBatches } from "./start-order";

/**
 * Freezes the way back into the run: the hosts in power-on order, the clusters to restore with
 * the flags and HA this outage changed, the guests that ran before in their start order, the
 * mode at this moment. What the steps do is this plan, whatever is edited meanwhile.
 */
export const planPowerBack: Step<PowerServices> = {
  name: "PlanPowerBack",
  maxDuration: () => 60,
  async visit(ctx) {
    const { db } = ctx.services;
    const input = ZPowerBackInput.safeParse(ctx.context.get("input"));
    if (!input.success) {
      return fail(
        "This run does not say which outage it brings back from; power-back runs are started by an admin's Bring back now or by the power monitor.",
      );
    }
    const settings = await readPowerSettings(db);
    const shutdownRuns = await db
      .select({ id: runs.id, context: runs.context, createdAt: runs.createdAt })
      .from(runs)
      .where(inArray(runs.id, input.data.shutdownRunIds))
      .orderBy(runs.createdAt, runs.id);
    const plan = buildPowerBackPlan({
      runs: shutdownRuns,
      guests: await guestsRecordedBy(db, [...input.data.shutdownRunIds, ...input.data.shedRunIds]),
      // A drill's way back plans with the drill's mode: dry for a dry drill even while armed.
      mode: input.data.drill
        ? planModeOf({ drill: input.data.drill }, settings.mode)
        : settings.mode,
      guestParallelism: settings.shutdown.guestParallelism,
      now: new Date(),
    });
    ctx.context.set("plan", plan);

    const by = input.data.by;
    const drill = input.data.drill;
    ctx.log(
      drill
        ? `the way back of a ${drill.live ? "live " : ""}drill, started by ${by.kind === "admin" ? by.name : "the power monitor"}: not an outage's way back`
        : by.kind === "admin"
          ? `started by ${by.name} (Bring back now)`
          : `started by the power monitor: ${by.why}`,
    );
    ctx.log(`from the outage of shutdown run(s) ${input.data.shutdownRunIds.join(", ")}`);
    if (input.data.shedRunIds.length > 0) {
      ctx.log(`and its early shedding: run(s) ${input.data.shedRunIds.join(", ")}`);
    }
    ctx.log(
      plan.mode === "armed"
        ? "mode: armed — hosts are powered on and guests started"
        : "mode: dry-run — nothing will be sent; every power-on and start is recorded as 'would …'",
    );
    for (const [i, host] of plan.hosts.entries()) {
      ctx.log(
        `power on ${i + 1}: ${host.name}${host.monitor ? " (Ceph monitor)" : ""}${host.kind === "pbs" ? " (backup server)" : ""}`,
      );
    }
    for (const cluster of plan.clusters) {
      ctx.log(
        `cluster ${cluster.name}: wait for quorum and every node's API${cluster.cephFlags.length > 0 ? `; Ceph: wait until no placement group is down or inactive, then clear ${cluster.cephFlags.join(", ")}` : ""}${cluster.haDisarmed ? "; re-arm HA" : ""}`,
      );
    }
    const batches = startBatches(
      plan.guests.map((g) => ({ ...g, order: g.startupOrder, up: g.upSeconds })),
    );
    for (const batch of batches) {
      ctx.log(
        `start ${batch[0]!.order === null ? "(no order)" : `order ${batch[0]!.order}`}: ${batch.map((g) => `${g.type}/${g.vmid} on ${g.node}${g.up ? ` (up ${g.up} s)` : ""}`).join(", ")}`,
      );
    }
    for (const u of plan.unknown) {
      ctx.log(`${u.node}: what ran there before is unknown (${u.why}): nothing is started there`);
    }
    if (plan.hosts.length === 0)
      return fail("None of the outage's hosts went down: nothing to bring back.");
    // A drill's way back ends no real outage: a latch asleep meanwhile stays the monitor's.
    const released = drill ? [] : await endOutageLatches(db, plan.feeds, { runId: ctx.runId });
    if (released.length > 0) {
      ctx.log(
        `the outage is over: latch of ${released.join(", ")} released — a loss of mains from now on is a new outage`,
      );
    }
    await reportBack(ctx, {
      severity: "warning",
      kind: "power_back.started",
      message: `${drill ? "Drill: way back" : "Power back"}${plan.mode === "armed" ? "" : " (dry-run)"}: ${plan.hosts.length} host(s) to power on, ${plan.guests.length} guest(s) to start again`,
      data: {
        mode: plan.mode,
        drill: drill !== undefined,
        hosts: plan.hosts.map((h) => h.name),
        guests: plan.guests.length,
      },
    });
    return advance(`${plan.hosts.length} host(s), ${plan.guests.length} guest(s), ${plan.mode}`);
  },
};
