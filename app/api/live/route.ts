import { requestActor } from "@/lib/auth/actor";
import { EVENT_STREAM_HEADERS } from "@/lib/live/event-stream";
import { respondError } from "@/lib/api/respond";
import { watchRequestAccess } from "@/lib/auth/stream-access";
import { createBrowserLiveStream } from "@/lib/live/browser-stream";
import { getLiveListener } from "@/lib/live/listener";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/** The tab's one live stream (lib/live/browser-stream.ts); it ends when the viewer's access does. */
export async function GET(request: Request): Promise<Response> {
  try {
    const actor = await requestActor(request, "viewer");
    const listener = getLiveListener();
    const stream = createBrowserLiveStream({
      listener,
      signal: request.signal,
      watchAccess: watchRequestAccess(request, actor, "viewer", listener),
    });
    return new Response(stream, { headers: EVENT_STREAM_HEADERS });
  } catch (error) {
    return respondError(error, "GET /api/live");
  }
}
