import { z } from "zod";
import { requestActor } from "@/lib/auth/actor";
import { parseInput } from "@/lib/api/parse-input";
import { json, respondError } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { acknowledgePowerEvent } from "@/lib/power/acknowledge-power-event";

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
export async function POST(
  request: Request,
  { params }: { params: Promise<{ eventId: string }> },
): Promise<Response> {
  try {
    const actor = await requestActor(request, "operator");
    const { eventId } = parseInput(ZEventRef, { eventId: (await params).eventId });
    return json(await acknowledgePowerEvent(getDb(), { eventId }, actor));
  } catch (error) {
    return respondError(error, "POST /api/power/events/[eventId]/acknowledge");
  }
}
