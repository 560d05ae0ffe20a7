/**
 * Starts watching whether a stream may go on; calls `onRevoked` once when it may not. Returns the
 * function that stops watching. A stream takes one of these, so it owns the watch's lifetime.
 */
export type WatchAccess = (onRevoked: () => void) => () => void;

/** Response headers of every Server-Sent Events stream: never cached, never buffered by a proxy. */
export const EVENT_STREAM_HEADERS = {
  "Content-Type": "text/event-stream; charset=utf-8",
  "Cache-Control": "no-cache, no-store, no-transform",
  Connection: "keep-alive",
  "X-Accel-Buffering": "no",
} as const;

/**
 * The last event of a stream whose session ended or whose token was revoked. The browser stops
 * reconnecting and sends the person to the sign-in page; EventSource alone would retry into 401s.
 */
export const SIGNED_OUT_EVENT = `event: signed-out\ndata: ${JSON.stringify({
  error: "Your session ended (signed out, expired, or your account changed). Sign in again.",
})}\n\n`;

/** What a stream's body writes to: `send` is a no-op once the stream is closed. */
export type EventStreamSink = {
  send(text: string): void;
  close(): void;
  readonly closed: boolean;
};

/**
 * The frame every Server-Sent Events stream of the console shares: a comment line every
 * `heartbeatMs` (proxies keep the connection, a dead browser is noticed), closing when the
 * request is aborted or the browser goes away, and — with `watchAccess` — `event: signed-out`
 * and close once the viewer's access ends. `open` starts the stream's own work and returns what
 * to release when the stream closes, for whichever reason.
 */
export function createEventStream(options: {
  signal: AbortSignal;
  heartbeatMs: number;
  watchAccess?: WatchAccess;
  open: (sink: EventStreamSink) => () => void;
}): ReadableStream<Uint8Array> {
  const { signal } = options;
  const encoder = new TextEncoder();
  let cleanup = () => {};

  return new ReadableStream<Uint8Array>({
    start(controller) {
      let done = false;
      let release = () => {};
      let stopWatching = () => {};
      const sink: EventStreamSink = {
        send(text) {
          if (done) return;
          try {
            controller.enqueue(encoder.encode(text));
          } catch {
            cleanup(); // the stream is already closed: the browser went away
          }
        },
        close: () => cleanup(),
        get closed() {
          return done;
        },
      };
      const heartbeat = setInterval(() => sink.send(`: heartbeat\n\n`), options.heartbeatMs);
      cleanup = () => {
        if (done) return;
        done = true;
        clearInterval(heartbeat);
        stopWatching();
        release();
        signal.removeEventListener("abort", cleanup);
        try {
          controller.close();
        } catch {
          // already closed or errored
        }
      };
      signal.addEventListener("abort", cleanup, { once: true });
      if (signal.aborted) return cleanup();

      const releaseOpened = options.open(sink);
      // `open` may already have closed the stream; then release at once, nothing else starts.
      if (done) return releaseOpened();
      release = releaseOpened;
      stopWatching =
        options.watchAccess?.(() => {
          sink.send(SIGNED_OUT_EVENT);
          cleanup();
        }) ?? (() => {});
    },
    cancel() {
      cleanup();
    },
  });
}
