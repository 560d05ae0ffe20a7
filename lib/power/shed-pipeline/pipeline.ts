import { definePipeline } from "@/lib/pipeline/step";
import { startGuests } from "../power-back/start-guests";
import { planShed } from "../shed/plan-shed";
import { planShedBack } from "../shed/plan-shed-back";
import { reportFailedShed, reportShedBack, reportShedDone } from "../shed/report-shed";
import { stopShedGuests } from "../shed/stop-shed-guests";
import { createPowerServices, type PowerServices } from "../shutdown/services";

export const POWER_SHED = "power-shed";
export const POWER_SHED_BACK = "power-shed-back";

/**
 * Early load shedding (issue 30, item 7): the guests marked `shed` (a Proxmox tag, or the
 * settings' list) go down once their hosts' feeds have been on battery for the shed threshold,
 * to stretch the runtime for the rest — a run on the power runner like the shutdown (log,
 * timeline, Abort), in dry-run recorded as would-do. The main trigger wins: it ends the shed
 * (lib/power/shed/shed-context.ts), and the shutdown run goes on beside it.
 */
export const powerShedPipeline = definePipeline<PowerServices>({
  name: POWER_SHED,
  queue: "power",
  steps: [planShed, stopShedGuests, reportShedDone],
  services: createPowerServices,
  onFailed: reportFailedShed,
});

/**
 * Mains back before the main trigger: the shed guests start again at once, by the way back's
 * own StartGuests (startup order, bounded, each read back running).
 */
export const powerShedBackPipeline = definePipeline<PowerServices>({
  name: POWER_SHED_BACK,
  queue: "power",
  steps: [planShedBack, startGuests, reportShedBack],
  services: createPowerServices,
  onFailed: reportFailedShed,
});
