"use client";

import { useQueryClient, type QueryKey } from "@tanstack/react-query";
import { useEffect, useRef } from "react";
import type { FleetPage } from "@/lib/hosts/fleet-query";
import type { FleetSort } from "@/lib/hosts/fleet-schemas";
import type { HostState } from "@/lib/hosts/host-state";
import { applyLiveMessage } from "./fleet-live-patch";
import { useLiveMessages, useLiveStatus } from "./live-provider";

/**
 * At most one re-read of the page (counts, total, order) per this interval, however many hosts
 * change: 1000 hosts changing phase every few seconds are one request a second, not 1000.
 */
export const FLEET_REFRESH_INTERVAL_MS = 1_000;
/** The first re-read after a quiet spell waits this long, so a burst is one request. */
const FLEET_REFRESH_DELAY_MS = 150;

/**
 * Keeps the fleet page on screen live: each run message patches its host's row in place (no
 * request), and a change that can move counts or the page's membership schedules one coalesced
 * re-read. Hosts off the page are remembered by state, so their phase changes cost nothing.
 */
export function useFleetLive(queryKey: QueryKey, sort: FleetSort): void {
  const queryClient = useQueryClient();
  const knownStates = useRef(new Map<string, HostState>());
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);
  const lastRefresh = useRef(0);
  const current = useRef({ queryKey, sort });
  useEffect(() => {
    current.current = { queryKey, sort };
  });

  const status = useLiveStatus();
  useEffect(() => {
    // Messages may have been lost while the stream was down (the provider re-reads everything).
    if (status !== "live") knownStates.current.clear();
  }, [status]);

  useEffect(
    () => () => {
      if (timer.current) clearTimeout(timer.current);
    },
    [],
  );

  useLiveMessages((message) => {
    const { queryKey: key, sort: currentSort } = current.current;
    const page = queryClient.getQueryData<FleetPage>(key);
    if (!page) return;
    const hostId = message.hostId;
    const outcome = applyLiveMessage(
      page,
      message,
      hostId ? knownStates.current.get(hostId) : undefined,
      currentSort,
    );
    if (outcome.page !== page) queryClient.setQueryData(key, outcome.page);
    if (hostId && outcome.state) knownStates.current.set(hostId, outcome.state);
    if (outcome.refresh && !timer.current) {
      const wait = Math.max(
        FLEET_REFRESH_DELAY_MS,
        lastRefresh.current + FLEET_REFRESH_INTERVAL_MS - Date.now(),
      );
      timer.current = setTimeout(() => {
        timer.current = null;
        lastRefresh.current = Date.now();
        void queryClient.invalidateQueries({ queryKey: current.current.queryKey, exact: true });
      }, wait);
    }
  });
}
