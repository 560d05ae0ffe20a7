import { definePipeline } from "@/lib/pipeline/step";
import { disarmHa } from "@/lib/power/cluster-sequence/disarm-ha";
import { setCephFlags } from "@/lib/power/cluster-sequence/set-ceph-flags";
import { shutDownClusterNodes } from "@/lib/power/cluster-sequence/shut-down-cluster-nodes";
import { stopClusterGuests } from "@/lib/power/cluster-sequence/stop-cluster-guests";
import { planShutdown } from "./plan-shutdown";
import { createPowerServices, type PowerServices } from "./services";
import { shutDownTargets } from "./shut-down-targets";
import { verifyTargetsDown } from "./verify-targets-down";

export const POWER_SHUTDOWN = "power-shutdown";

/**
 * The shutdown when the power runs out: a run on the engine (live phase line, log, timeline,
 * Abort), started by the power monitor, ticking on the power runner so it never waits behind
 * onboarding. Standalone targets first (their calls need nothing of the clusters); then each
 * cluster shut down as one unit: HA disarmed, every guest stopped, Ceph flagged, the nodes in
 * order (docs/power-cluster-sequence.md); a step without a cluster in the run just advances.
 */
export const powerShutdownPipeline = definePipeline<PowerServices>({
  name: POWER_SHUTDOWN,
  queue: "power",
  steps: [
    planShutdown,
    shutDownTargets,
    disarmHa,
    stopClusterGuests,
    setCephFlags,
    shutDownClusterNodes,
    verifyTargetsDown,
  ],
  services: createPowerServices,
});
