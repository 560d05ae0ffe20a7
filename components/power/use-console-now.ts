"use client";

import { useHydrated, useNow } from "../use-now";

/**
 * The console's clock as the page best knows it, ticking every second: the browser's clock
 * corrected by how far the console's `serverTime` was from it when the answer arrived
 * (`receivedAt`, the browser's clock then). Times on battery are the console's measure; a
 * browser whose clock is off by minutes must not show them off by minutes. On the server and
 * while hydrating it is `serverTime` itself: both sides render the same text from the same data.
 */
export function useConsoleNow(serverTime: string, receivedAt: number): number {
  const now = useNow();
  const hydrated = useHydrated();
  if (!hydrated) return Date.parse(serverTime);
  return now + (Date.parse(serverTime) - receivedAt);
}
