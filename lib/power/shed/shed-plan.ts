import { z } from "zod";
import type { PowerMode, ShedSettings } from "@/lib/power/config/settings";
import type { PveEndpoint } from "@/lib/power/targets/load-targets";

/** What starts a `power-shed` run: the monitor, the outages that made it due, the targets. */
export const ZShedInput = z.object({
  why: z.string(),
  /** `upsId@onBatterySince` of each feed whose outage made it due: one shed per outage. */
  outages: z.array(z.string()).min(1),
  targetIds: z.array(z.uuid()).min(1),
  /** The earliest mains→battery transition among them: the outage, as the records name it. */
  dueSince: z.iso.datetime(),
});
export type ShedInput = z.infer<typeof ZShedInput>;

/** One cluster (or standalone host) whose shed guests go down: the nodes and how to ask. */
export type ShedGroup = {
  /** The cluster's id, or the standalone target's. */
  key: string;
  name: string;
  clusterId: string | null;
  /** A standalone host's target (the records key it by); null for a cluster. */
  targetId: string | null;
  /** The nodes due for shedding: only their guests are shed. */
  nodes: string[];
  /** The API endpoints of its due nodes, any of which answers for the cluster. */
  endpoints: PveEndpoint[];
  /** The power targets of those nodes, in the same order. */
  targetIds: string[];
};

/** The frozen shed run: what is shed, how, and in which mode. */
export type ShedPlan = {
  mode: PowerMode;
  plannedAt: string;
  dueSince: string;
  afterMinutes: number;
  selection: Pick<ShedSettings, "tag" | "guests">;
  groups: ShedGroup[];
  /** Targets left out, with why (a backup server, no API endpoint). */
  skipped: { name: string; why: string }[];
  /** Every UPS feeding the shed targets: back on mains ends the shed, its latch ends it too. */
  feeds: string[];
  consoleGuest: { node: string; vmid: number } | null;
  callTimeoutSeconds: number;
  guestTimeoutSeconds: number;
  guestParallelism: number;
};

export const NO_SHED_PLAN = "This run has no plan; PlanShed must run first.";
