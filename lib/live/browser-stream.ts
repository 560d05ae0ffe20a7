import { createEventStream } from "./event-stream";
import type { LiveEvent, LiveListener } from "./listener";
import type { WatchAccess } from "./event-stream";

const HEARTBEAT_MS = 15_000;

/**
 * The browser's live stream (/api/live) as Server-Sent Events: one `data: {json}` per run or
 * host message, an `event: status` whenever the server's database listener connects or drops
 * (`{"listening":bool}`), a heartbeat comment every 15 s, and `event: signed-out` (then close)
 * once the viewer's access ends.
 */
export function createBrowserLiveStream(options: {
  listener: LiveListener;
  signal: AbortSignal;
  watchAccess: WatchAccess;
  heartbeatMs?: number;
}): ReadableStream<Uint8Array> {
  const { listener } = options;
  return createEventStream({
    signal: options.signal,
    heartbeatMs: options.heartbeatMs ?? HEARTBEAT_MS,
    watchAccess: options.watchAccess,
    open(sink) {
      const sendStatus = (listening: boolean) =>
        sink.send(`event: status\ndata: ${JSON.stringify({ listening })}\n\n`);
      // `retry` tells EventSource how soon to reconnect after a drop.
      sink.send(`retry: 3000\n: connected\n\n`);
      const unsubscribe = listener.subscribe((event: LiveEvent) => {
        if (event.kind === "status") sendStatus(event.connected);
        // Log chunks have their own per-run streams (/api/runs/:id/log/stream); access changes
        // are for the servers' streams, not the browser.
        else if (event.message.type === "log" || event.message.type === "access") return;
        else sink.send(`data: ${JSON.stringify(event.message)}\n\n`);
      });
      sendStatus(listener.connected);
      return unsubscribe;
    },
  });
}
