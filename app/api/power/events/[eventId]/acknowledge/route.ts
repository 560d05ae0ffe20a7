import { z } from "zod";
import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { acknowledgePowerEvent } from "@/lib/power/operations/acknowledge-power-event";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

const ZEventRef = z.object({
  eventId: z.coerce
    .number({ error: "Not an event id." })
    .int("Not an event id.")
    .positive("Not an event id.")
    .max(Number.MAX_SAFE_INTEGER, "Not an event id."),
});

/**
 * Acknowledges a power alarm (operators and admins): 200 `{ eventId, acknowledgedAt,
 * acknowledgedBy }`; acknowledging again answers the first acknowledgement. 404 unknown event.
 */
export const POST = route(
  "POST /api/power/events/[eventId]/acknowledge",
  {
    role: "operator",
    summary: "Acknowledge a power alarm",
    body: { schema: ZEventRef, read: "none", fromPath: { eventId: "eventId" } },
  },
  async ({ actor, body }) => json(await acknowledgePowerEvent(getDb(), body, actor)),
);
