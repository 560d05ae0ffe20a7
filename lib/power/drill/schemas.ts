import { z } from "zod";

/**
 * Starting a drill: which UPS's outage to rehearse, and whether it is live. A live drill names
 * the targets its confirmation listed (the ids of `GET /api/power/drills?upsId=…`'s `targets`);
 * a dry-run drill sends nothing, so it needs no list.
 */
export const ZStartDrill = z.discriminatedUnion("live", [
  z.object({
    upsId: z.uuid("Choose the UPS whose outage the drill rehearses."),
    live: z.literal(false),
  }),
  z.object({
    upsId: z.uuid("Choose the UPS whose outage the drill rehearses."),
    live: z.literal(true),
    confirmedTargetIds: z
      .array(z.uuid())
      .min(1, "A live drill confirms the targets it shuts down: none was listed.")
      .max(1000),
  }),
]);
export type TStartDrill = z.infer<typeof ZStartDrill>;

export const ZDrillTargetsQuery = z.object({ upsId: z.uuid("Name a UPS: ?upsId=<its id>.") });

const ZDrillRunId = z.uuid("Name the drill's run: its id, from Runs and drills.");

/** A drill's run, in a path (`/api/power/drills/:runId/way-back`). */
export const ZDrillRunParams = { runId: ZDrillRunId };

const LIVE_CHOICE = "Say whether the way back is live: live false (dry-run) or true.";
const ZConfirmedHosts = z
  .array(z.uuid("Each confirmed host is a target id from the way back's plan."))
  .min(1, "A live way back confirms the hosts it powers on: none was listed.")
  .max(1000);

/**
 * The body of `POST /api/power/drills/:runId/way-back`, after the drill's shutdown run ended.
 * Dry-run powers nothing on and starts nothing; live (only after a live drill, only while
 * armed) names the hosts its confirmation listed — the ids of `GET
 * /api/power/drills/:runId/way-back`'s `plan.hosts` — and exactly that list is held against the
 * plan server-side, as a live drill's targets are.
 */
export const ZDrillWayBackBody = z.discriminatedUnion(
  "live",
  [
    z.object({ live: z.literal(false) }),
    z.object({ live: z.literal(true), confirmedTargetIds: ZConfirmedHosts }),
  ],
  { error: LIVE_CHOICE },
);

/** The same with the drill's run: what startDrillWayBack and the server action take. */
export const ZStartDrillWayBack = z.discriminatedUnion(
  "live",
  [
    z.object({ runId: ZDrillRunId, live: z.literal(false) }),
    z.object({ runId: ZDrillRunId, live: z.literal(true), confirmedTargetIds: ZConfirmedHosts }),
  ],
  { error: LIVE_CHOICE },
);
export type TStartDrillWayBack = z.infer<typeof ZStartDrillWayBack>;
