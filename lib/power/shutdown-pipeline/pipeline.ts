import { definePipeline } from "@/lib/pipeline/step";
import { disarmHa } from "@/lib/power/cluster-sequence/disarm-ha";
import { setCephFlags } from "@/lib/power/cluster-sequence/set-ceph-flags";
import { shutDownClusterNodes } from "@/lib/power/cluster-sequence/shut-down-cluster-nodes";
import { stopClusterGuests } from "@/lib/power/cluster-sequence/stop-cluster-guests";
import { checkConsolidationStep } from "@/lib/power/consolidate/check-consolidation";
import { migrateGuests } from "@/lib/power/consolidate/migrate-guests";
import { planShutdown } from "./plan-shutdown";
import { reportFailedRun } from "../shutdown/run-failed";
import { createPowerServices, type PowerServices } from "../shutdown/services";
import { shutDownTargets } from "../shutdown/shut-down-targets";
import { verifyTargetsDown } from "../shutdown/verify-targets-down";
import { cycleUpsOutput } from "../shutdown/cycle-ups-output";

export const POWER_SHUTDOWN = "power-shutdown";

/**
 * The shutdown when the power runs out: a run on the engine (live phase line, log, timeline,
 * Abort), started by the power monitor, ticking on the power runner so it never waits behind
 * onboarding. Standalone targets first (their calls need nothing of the clusters); then each
 * cluster shut down as one unit: HA disarmed, every guest stopped, Ceph flagged, the nodes in
 * order (docs/power-cluster-sequence.md); a step without a cluster in the run just advances.
 * A consolidation's first stage runs on the same steps: checked, HA disarmed, the guests of the
 * nodes that go down migrated (or stopped), those nodes in order. Last, only where the UPS's
 * setting asks for it and every target on the UPS was seen down: the UPS's output cycle.
 */
export const powerShutdownPipeline = definePipeline<PowerServices>({
  name: POWER_SHUTDOWN,
  queue: "power",
  steps: [
    planShutdown,
    shutDownTargets,
    checkConsolidationStep,
    disarmHa,
    migrateGuests,
    stopClusterGuests,
    setCephFlags,
    shutDownClusterNodes,
    verifyTargetsDown,
    cycleUpsOutput,
  ],
  services: createPowerServices,
  // A run that ends without success notifies, whatever ended it (lib/power/shutdown/run-failed.ts).
  onFailed: reportFailedRun,
});
