import type { WatchAccess } from "@/lib/live/stream-access";
import { SIGNED_OUT_EVENT } from "@/lib/live/event-stream";
import type { LiveEvent, LiveListener } from "./listener";

const HEARTBEAT_MS = 15_000;

/**
 * The browser's live stream (/api/live) as Server-Sent Events: one `data: {json}` per run or
 * host message, an `event: status` whenever the server's database listener connects or drops
 * (`{"listening":bool}`), and a comment line every 15 s so proxies keep the connection open and
 * a dead browser is noticed. When `watchAccess` reports the viewer's access gone, the stream
 * sends `event: signed-out` and closes.
 */
export function createBrowserLiveStream(options: {
  listener: LiveListener;
  signal: AbortSignal;
  watchAccess: WatchAccess;
  heartbeatMs?: number;
}): ReadableStream<Uint8Array> {
  const { listener, signal } = options;
  const encoder = new TextEncoder();
  let cleanup = () => {};

  return new ReadableStream<Uint8Array>({
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
        // Log chunks have their own per-run streams (/api/runs/:id/log/stream); access changes
        // are for the servers' streams, not the browser.
        else if (event.message.type === "log" || event.message.type === "access") return;
        else send(`data: ${JSON.stringify(event.message)}\n\n`);
      });
      sendStatus(listener.connected);
      const heartbeat = setInterval(
        () => send(`: heartbeat\n\n`),
        options.heartbeatMs ?? HEARTBEAT_MS,
      );
      const stopWatching = options.watchAccess(() => {
        send(SIGNED_OUT_EVENT);
        cleanup();
      });

      cleanup = () => {
        if (done) return;
        done = true;
        clearInterval(heartbeat);
        unsubscribe();
        stopWatching();
        signal.removeEventListener("abort", cleanup);
        try {
          controller.close();
        } catch {
          // already closed or errored
        }
      };
      signal.addEventListener("abort", cleanup, { once: true });
      if (signal.aborted) cleanup();
    },
    cancel() {
      cleanup();
    },
  });
}
