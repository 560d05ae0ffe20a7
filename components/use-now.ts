"use client";

import { useSyncExternalStore } from "react";

// One 1-second ticker for the whole tab, running only while something shows elapsed time.
let now = Date.now();
const listeners = new Set<() => void>();
let timer: ReturnType<typeof setInterval> | null = null;

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  if (!timer) {
    now = Date.now();
    timer = setInterval(() => {
      now = Date.now();
      for (const l of listeners) l();
    }, 1_000);
  }
  return () => {
    listeners.delete(listener);
    if (listeners.size === 0 && timer) {
      clearInterval(timer);
      timer = null;
    }
  };
}

/**
 * The current time in ms, re-rendering the caller every second. Elements showing it differ
 * between server render and hydration by nature: mark them `suppressHydrationWarning`.
 */
export function useNow(): number {
  return useSyncExternalStore(
    subscribe,
    () => now,
    () => (typeof window === "undefined" ? Date.now() : now),
  );
}
