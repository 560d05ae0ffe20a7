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
