import { ZUpdatePowerSettings } from "@/lib/power/config/schemas";

/**
 * A change of the global power settings as the API and the settings form take it: at least one
 * of the five parts, since a change that names none would be saved (and logged) as a change of
 * nothing.
 */
export const ZPowerSettingsChange = ZUpdatePowerSettings.refine(
  (change) =>
    change.triggers !== undefined ||
    change.pollIntervalMs !== undefined ||
    change.shutdown !== undefined ||
    change.powerBack !== undefined ||
    change.shed !== undefined,
  { message: "Nothing to change: send triggers, pollIntervalMs, shutdown, powerBack or shed." },
);
