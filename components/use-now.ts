"use client";

import {
  createContext,
  createElement,
  useContext,
  useSyncExternalStore,
  type ReactNode,
} from "react";

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
 * The moment the server rendered the page, handed to the browser with it (app/layout.tsx). The
 * server renders every relative time ("latched 34s ago") against it, and hydration renders
 * against the very same value, so the two agree to the character (issue 32: React error #418 on
 * /power while a trigger was latched); the clock starts ticking right after hydration.
 */
const RenderClock = createContext<number | null>(null);

export function RenderClockProvider({ at, children }: { at: number; children: ReactNode }) {
  return createElement(RenderClock.Provider, { value: at }, children);
}

/**
 * The current time in ms, re-rendering the caller every second. On the server and during
 * hydration it is the page's render time (identical on both sides), afterwards the browser's.
 */
export function useNow(): number {
  const renderedAt = useContext(RenderClock);
  return useSyncExternalStore(
    subscribe,
    () => now,
    () => renderedAt ?? now,
  );
}

const noSubscription = () => () => {};

/** False on the server and while hydrating, true once the page runs in the browser. */
export function useHydrated(): boolean {
  return useSyncExternalStore(
    noSubscription,
    () => true,
    () => false,
  );
}
