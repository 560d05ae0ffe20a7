/** One server-sent event as the console's streams frame it (lib/live/event-stream.ts). */
export type SseEvent = { event: string | null; id: string | null; data: string | null };

/**
 * The events of an SSE body, in order, as they arrive; ends when the body ends. Comment lines
 * (`: keep-alive`) are skipped; a block without fields (a bare comment) yields nothing.
 */
export async function* sseEvents(
  reader: ReadableStreamDefaultReader<Uint8Array>,
): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let end: number;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const fields = new Map<string, string>();
      for (const line of block.split("\n")) {
        const colon = line.indexOf(": ");
        if (line.startsWith(":") || colon < 0) continue;
        fields.set(line.slice(0, colon), line.slice(colon + 2));
      }
      if (fields.size === 0) continue;
      yield {
        event: fields.get("event") ?? null,
        id: fields.get("id") ?? null,
        data: fields.get("data") ?? null,
      };
    }
  }
}
