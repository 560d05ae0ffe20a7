"use client";

import { useNow } from "../use-now";

/**
 * The console's clock as the page best knows it, ticking every second: the browser's clock
 * corrected by how far the console's `serverTime` was from it when the answer arrived
 * (`receivedAt`, the browser's clock then). Times on battery are the console's measure; a
 * browser whose clock is off by minutes must not show them off by minutes.
 */
export function useConsoleNow(serverTime: string, receivedAt: number): number {
  const now = useNow();
  return now + (Date.parse(serverTime) - receivedAt);
}
