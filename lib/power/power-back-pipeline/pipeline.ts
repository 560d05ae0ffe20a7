import { definePipeline } from "@/lib/pipeline/step";
import { planPowerBack } from "../power-back/plan-power-back";
import { powerOnHosts } from "../power-back/power-on-hosts";
import { reportFailedPowerBack, reportPowerBack } from "../power-back/report-power-back";
import { restoreClusters } from "../power-back/restore-clusters";
import { startGuests } from "../power-back/start-guests";
import { waitForNodes } from "../power-back/wait-for-nodes";
import { createPowerServices, type PowerServices } from "../shutdown/services";

export const POWER_BACK = "power-back";

/**
 * The way back after an outage (issue 30): a run on the engine like the shutdown (log,
 * timeline, Abort), on the power runner. Hosts powered on by their controllers in order, their
 * APIs and the clusters' quorum awaited, Ceph's placement groups settled before the flags this
 * outage set are cleared, HA re-armed, then the guests that ran before started in their startup
 * order. Every step asks the feeds first: a new outage ends the run (./start-power-back.ts).
 */
export const powerBackPipeline = definePipeline<PowerServices>({
  name: POWER_BACK,
  queue: "power",
  steps: [planPowerBack, powerOnHosts, waitForNodes, restoreClusters, startGuests, reportPowerBack],
  services: createPowerServices,
  onFailed: reportFailedPowerBack,
});
