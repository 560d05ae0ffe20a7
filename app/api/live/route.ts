import { requestActor } from "@/lib/auth/actor";
import { respondError } from "@/lib/api/respond";
import { getLiveListener, type LiveEvent, type LiveListener } from "@/lib/live/listener";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

const HEARTBEAT_MS = 15_000;

/**
 * Server-Sent Events: one `data: {json}` per live message, an `event: status` whenever the
 * server's database listener connects or drops (`{"listening":bool}`), and a comment line every
 * 15 s so proxies keep the connection open and a dead browser is noticed.
 */
export async function GET(request: Request): Promise<Response> {
  let listener: LiveListener;
  try {
    await requestActor(request, "viewer");
    listener = getLiveListener();
  } catch (error) {
    return respondError(error, "GET /api/live");
  }
  const encoder = new TextEncoder();
  let cleanup = () => {};

  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      let done = false;
      const send = (text: string) => {
        if (done) return;
        try {
          controller.enqueue(encoder.encode(text));
        } catch {
          cleanup(); // the stream is already closed: the browser went away
        }
      };
      const sendStatus = (listening: boolean) =>
        send(`event: status\ndata: ${JSON.stringify({ listening })}\n\n`);

      // `retry` tells EventSource how soon to reconnect after a drop.
      send(`retry: 3000\n: connected\n\n`);
      const unsubscribe = listener.subscribe((event: LiveEvent) => {
        if (event.kind === "status") sendStatus(event.connected);
        // Log chunks have their own per-run streams (/api/runs/:id/log/stream).
        else if (event.message.type === "log") return;
        else send(`data: ${JSON.stringify(event.message)}\n\n`);
      });
      sendStatus(listener.connected);
      const heartbeat = setInterval(() => send(`: heartbeat\n\n`), HEARTBEAT_MS);

      cleanup = () => {
        if (done) return;
        done = true;
        clearInterval(heartbeat);
        unsubscribe();
        request.signal.removeEventListener("abort", cleanup);
        try {
          controller.close();
        } catch {
          // already closed or errored
        }
      };
      request.signal.addEventListener("abort", cleanup, { once: true });
      if (request.signal.aborted) cleanup();
    },
    cancel() {
      cleanup();
    },
  });

  return new Response(stream, {
    headers: {
      "Content-Type": "text/event-stream; charset=utf-8",
      "Cache-Control": "no-cache, no-store, no-transform",
      Connection: "keep-alive",
      "X-Accel-Buffering": "no",
    },
  });
}
