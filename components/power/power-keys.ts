import type { QueryKey } from "@tanstack/react-query";
import type { LiveMessage } from "@/lib/live/notify";

export type PowerLiveMessage = Extract<LiveMessage, { type: "power" }>;

/** The react-query keys of the power pages; the live stream invalidates them (powerKeysFor). */
export const powerKeys = {
  all: ["power"] as const,
  mode: ["power", "mode"] as const,
  overview: ["power", "overview"] as const,
  events: ["power", "events"] as const,
  eventPage: (filter: Record<string, string>) => ["power", "events", filter] as const,
  protection: ["power", "protection"] as const,
  plan: ["power", "plan"] as const,
  shutdownRun: ["power", "shutdown-run"] as const,
  powerBack: ["power", "power-back"] as const,
  shed: ["power", "shed"] as const,
  clusters: ["power", "clusters"] as const,
  selfTest: ["power", "self-test"] as const,
};

export function isPowerLiveMessage(value: unknown): value is PowerLiveMessage {
  if (typeof value !== "object" || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    v.type === "power" &&
    (v.upsId === null || typeof v.upsId === "string") &&
    (v.eventId === null || typeof v.eventId === "number")
  );
}

/**
 * What one power message makes stale. A reading (a UPS, no event) moves the cards and the plan's
 * runtime reserve; an event may also be a shutdown call, a mode change or a latch, so it
 * refreshes the log, the run, the protection and the mode too; neither (the mode or the
 * configuration changed) refreshes everything. The chart is not here: it appends the new
 * readings itself (components/power/readings-chart.tsx).
 */
export function powerKeysFor(message: PowerLiveMessage): QueryKey[] {
  if (message.upsId === null && message.eventId === null) return [powerKeys.all];
  const keys: QueryKey[] = [powerKeys.overview, powerKeys.plan];
  if (message.eventId !== null) {
    // An event may be a configuration change (config.changed): the self-test card then says
    // its result is from before it.
    keys.push(
      powerKeys.events,
      powerKeys.shutdownRun,
      // A way back records power_back.* events as it goes (and its start is one).
      powerKeys.powerBack,
      // A shed records power.shed.* events as it goes (its start is one).
      powerKeys.shed,
      powerKeys.protection,
      powerKeys.mode,
      powerKeys.selfTest,
    );
  }
  return keys;
}
