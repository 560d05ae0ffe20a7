import { formatClock, formatDateTime } from "./format";

/**
 * A moment in the reader's own time zone and locale. The server renders it in its own, so the
 * text may differ from what hydration renders: the element is marked for that, and it holds
 * nothing but the text (a mismatch inside it can never be one of structure).
 */
export function LocalTime({ iso, clock = false }: { iso: string; clock?: boolean }) {
  return (
    <time dateTime={iso} suppressHydrationWarning>
      {clock ? formatClock(iso) : formatDateTime(iso)}
    </time>
  );
}
