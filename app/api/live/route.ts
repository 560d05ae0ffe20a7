import { route } from "@/lib/api/route";
import { watchRequestAccess } from "@/lib/auth/stream-access";
import { createBrowserLiveStream } from "@/lib/live/browser-stream";
import { EVENT_STREAM_HEADERS } from "@/lib/live/event-stream";
import { getLiveListener } from "@/lib/live/listener";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/** The tab's one live stream (lib/live/browser-stream.ts); it ends when the viewer's access does. */
export const GET = route(
  "GET /api/live",
  { role: "viewer", summary: "The browser tab's live stream of changes (Server-Sent Events)" },
  async ({ request, actor }) => {
    const listener = getLiveListener();
    const stream = createBrowserLiveStream({
      listener,
      signal: request.signal,
      watchAccess: watchRequestAccess(request, actor, "viewer", listener),
    });
    return new Response(stream, { headers: EVENT_STREAM_HEADERS });
  },
);
