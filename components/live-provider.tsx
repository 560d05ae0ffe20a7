"use client";

import { useQueryClient, type QueryKey } from "@tanstack/react-query";
import { createContext, useContext, useEffect, useRef, useState, type ReactNode } from "react";
import type { LiveList, LiveMessage } from "@/lib/live/notify";
import { leaveForSignIn } from "./leave-for-sign-in";
import { liveKeys } from "./live-keys";
import { isPowerLiveMessage, powerKeysFor, type PowerLiveMessage } from "./power/power-keys";
import { powerRefresher } from "./power/power-refresh";

/**
 * - connecting:   first attempt, nothing received yet
 * - live:         the stream is open and the server's database listener is connected
 * - reconnecting: either of them dropped; queries poll until it is back
 */
export type LiveStatus = "connecting" | "live" | "reconnecting";

const LiveContext = createContext<LiveStatus>("connecting");

export type LiveMessageListener = (message: BrowserLiveMessage) => void;
type Subscribe = (listener: LiveMessageListener) => () => void;
const LiveMessagesContext = createContext<Subscribe>(() => () => {});
/** Power messages have their own listeners: the fleet's would refresh on every UPS reading. */
type PowerListener = (message: PowerLiveMessage) => void;
type SubscribePower = (listener: PowerListener) => () => void;
const PowerMessagesContext = createContext<SubscribePower>(() => () => {});

/** How often queries poll while the live stream is down. */
export const FALLBACK_POLL_MS = 3_000;
/** Invalidations arriving within this window are coalesced into one refetch per key. */
const COALESCE_MS = 150;

/**
 * What /api/live relays about hosts and runs (log messages stay on the log streams, access
 * changes on the server; a process restart only refreshes the crash-loop banner; power messages
 * are for the power pages).
 */
export type BrowserLiveMessage = Exclude<
  LiveMessage,
  | { type: "log" }
  | { type: "access" }
  | { type: "process-restart" }
  | { type: "power" }
  | { type: "list" }
>;

/** A list page's records changed: those pages re-render (ListLiveRefresh). */
type ListListener = (list: LiveList) => void;
type SubscribeList = (listener: ListListener) => () => void;
const ListMessagesContext = createContext<SubscribeList>(() => () => {});

function listOf(value: unknown): LiveList | null {
  if (typeof value !== "object" || value === null) return null;
  const v = value as Record<string, unknown>;
  return v.type === "list" && (v.list === "catalog" || v.list === "users") ? v.list : null;
}

/**
 * The hosts list is not invalidated here: with a fleet changing phase every few seconds that
 * would be a refetch per message. The fleet view patches its rows from the message itself and
 * refreshes its counts with one coalesced request (components/fleet-live.ts).
 */
function keysFor(message: BrowserLiveMessage): QueryKey[] {
  const keys: QueryKey[] = [];
  if (message.hostId) keys.push(liveKeys.host(message.hostId));
  if (message.type === "run") keys.push(liveKeys.run(message.runId));
  return keys;
}

function parse(data: unknown): unknown {
  try {
    return typeof data === "string" ? JSON.parse(data) : null;
  } catch {
    return null;
  }
}

function isLiveMessage(value: unknown): value is BrowserLiveMessage {
  if (typeof value !== "object" || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    (v.type === "run" && typeof v.runId === "string") ||
    (v.type === "host" && typeof v.hostId === "string")
  );
}

function isProcessRestart(value: unknown): boolean {
  return (
    typeof value === "object" &&
    value !== null &&
    (value as Record<string, unknown>).type === "process-restart"
  );
}

/**
 * Opens ONE EventSource for the tab and turns each message into query invalidations. Whenever
 * the stream becomes live again, everything is invalidated: messages sent while it was down
 * are lost, so the only safe assumption is that anything may have changed.
 */
export function LiveProvider({ children }: { children: ReactNode }) {
  const queryClient = useQueryClient();
  const [status, setStatus] = useState<LiveStatus>("connecting");
  const listeners = useRef(new Set<LiveMessageListener>());
  const [subscribe] = useState<Subscribe>(() => (listener: LiveMessageListener) => {
    listeners.current.add(listener);
    return () => {
      listeners.current.delete(listener);
    };
  });
  const listListeners = useRef(new Set<ListListener>());
  const [subscribeList] = useState<SubscribeList>(() => (listener: ListListener) => {
    listListeners.current.add(listener);
    return () => {
      listListeners.current.delete(listener);
    };
  });
  const powerListeners = useRef(new Set<PowerListener>());
  const [subscribePower] = useState<SubscribePower>(() => (listener: PowerListener) => {
    powerListeners.current.add(listener);
    return () => {
      powerListeners.current.delete(listener);
    };
  });

  useEffect(() => {
    let source: EventSource | null = null;
    let disposed = false;
    let open = false;
    let listening = false;
    let wasLive = false;
    let everLive = false;
    let attempt = 0;
    let reconnectTimer: ReturnType<typeof setTimeout> | null = null;
    let flushTimer: ReturnType<typeof setTimeout> | null = null;
    const pending = new Map<string, QueryKey>();
    const refreshPower = powerRefresher(queryClient, () => disposed);

    const flush = () => {
      flushTimer = null;
      const keys = [...pending.values()];
      pending.clear();
      for (const queryKey of keys) void queryClient.invalidateQueries({ queryKey });
    };
    const invalidate = (keys: QueryKey[]) => {
      for (const key of keys) pending.set(JSON.stringify(key), key);
      flushTimer ??= setTimeout(flush, COALESCE_MS);
    };

    const update = () => {
      const live = open && listening;
      if (live && !wasLive) {
        // Back (or live for the first time since the page was rendered): catch up.
        void queryClient.invalidateQueries();
      }
      wasLive = live;
      everLive ||= live;
      setStatus(live ? "live" : everLive || attempt > 0 ? "reconnecting" : "connecting");
    };

    const connect = () => {
      if (disposed) return;
      const es = new EventSource("/api/live");
      source = es;
      es.onopen = () => {
        open = true;
        attempt = 0;
        update();
      };
      es.addEventListener("status", (event) => {
        const data = parse((event as MessageEvent).data) as { listening?: unknown } | null;
        listening = data?.listening === true;
        update();
      });
      es.addEventListener("signed-out", () => {
        disposed = true;
        es.close();
        leaveForSignIn();
      });
      es.onmessage = (event) => {
        const message = parse(event.data);
        if (isProcessRestart(message)) return invalidate([liveKeys.crashLoops]);
        const list = listOf(message);
        if (list) {
          for (const listener of listListeners.current) listener(list);
          return;
        }
        if (isPowerLiveMessage(message)) {
          refreshPower(powerKeysFor(message));
          for (const listener of powerListeners.current) listener(message);
          return;
        }
        if (!isLiveMessage(message)) return;
        invalidate(keysFor(message));
        for (const listener of listeners.current) listener(message);
      };
      es.onerror = () => {
        open = false;
        listening = false;
        attempt += 1;
        update();
        // EventSource retries by itself after a dropped stream, but gives up for good on an
        // HTTP error (e.g. 503 while the database is unreachable): then we retry, with backoff.
        if (es.readyState === EventSource.CLOSED) {
          es.close();
          const delay = Math.min(30_000, 1_000 * 2 ** Math.min(attempt, 5));
          reconnectTimer = setTimeout(connect, delay);
        }
      };
    };

    connect();
    return () => {
      disposed = true;
      source?.close();
      if (reconnectTimer) clearTimeout(reconnectTimer);
      if (flushTimer) clearTimeout(flushTimer);
    };
  }, [queryClient]);

  return (
    <LiveContext.Provider value={status}>
      <LiveMessagesContext.Provider value={subscribe}>
        <PowerMessagesContext.Provider value={subscribePower}>
          <ListMessagesContext.Provider value={subscribeList}>
            {children}
          </ListMessagesContext.Provider>
        </PowerMessagesContext.Provider>
      </LiveMessagesContext.Provider>
    </LiveContext.Provider>
  );
}

/**
 * Calls `listener` with every live message while the caller is mounted (the tab's one stream).
 * Keep the listener cheap: it runs once per message, and a busy fleet sends many.
 */
export function useLiveMessages(listener: LiveMessageListener): void {
  const subscribe = useContext(LiveMessagesContext);
  const latest = useRef(listener);
  useEffect(() => {
    latest.current = listener;
  });
  useEffect(() => subscribe((message) => latest.current(message)), [subscribe]);
}

/** Calls `listener` with every power message while the caller is mounted (the power pages). */
export function usePowerLiveMessages(listener: PowerListener): void {
  const subscribe = useContext(PowerMessagesContext);
  const latest = useRef(listener);
  useEffect(() => {
    latest.current = listener;
  });
  useEffect(() => subscribe((message) => latest.current(message)), [subscribe]);
}

export function useLiveStatus(): LiveStatus {
  return useContext(LiveContext);
}

/** `refetchInterval` for live queries: none while the stream carries updates, polling otherwise. */
export function useFallbackRefetchInterval(): number | false {
  return useLiveStatus() === "live" ? false : FALLBACK_POLL_MS;
}

/** The small "live / reconnecting" dot in the header. */
export function LiveIndicator() {
  const status = useLiveStatus();
  const label =
    status === "live"
      ? "Live"
      : status === "connecting"
        ? "Connecting…"
        : "Reconnecting… (polling)";
  return (
    <span
      className={`live-indicator live-${status}`}
      data-testid="live-indicator"
      data-status={status}
      role="status"
      title={
        status === "live"
          ? "Updates arrive as they happen."
          : "The live stream is down; the page refreshes every few seconds until it is back."
      }
    >
      <span className="live-dot" aria-hidden="true" />
      {label}
    </span>
  );
}

/** Calls `listener` whenever the records of a list page changed (see ListLiveRefresh). */
export function useListLiveMessages(listener: ListListener): void {
  const subscribe = useContext(ListMessagesContext);
  const latest = useRef(listener);
  useEffect(() => {
    latest.current = listener;
  });
  useEffect(() => subscribe((list) => latest.current(list)), [subscribe]);
}
