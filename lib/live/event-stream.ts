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
