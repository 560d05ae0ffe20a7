"use client";

import { keepPreviousData, useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useCallback, useEffect, useRef, useState, type KeyboardEvent } from "react";
import type { FleetPage } from "@/lib/hosts/fleet-query";
import {
  effectiveDir,
  fleetQueryToParams,
  type FleetQuery,
  type FleetSort,
} from "@/lib/hosts/fleet-schemas";
import type { HostState } from "@/lib/hosts/host-state";
import { IfCan } from "./actor-context";
import { FleetCounts } from "./fleet-counts";
import { describeRange } from "./fleet-format";
import { useFleetLive } from "./fleet-live";
import { FleetPager } from "./fleet-pager";
import { FleetTable } from "./fleet-table";
import { FleetToolbar } from "./fleet-toolbar";
import { liveKeys } from "./live-keys";
import { useFallbackRefetchInterval } from "./live-provider";
import { fetchJson } from "./queries";

/** Typing settles for this long before the list is asked again. */
const SEARCH_DEBOUNCE_MS = 150;
/** "Updated … ago" is coarse; rows need not re-render every second for it. */
const AGO_TICK_MS = 10_000;

function fleetKey(params: string) {
  return [...liveKeys.hosts, "fleet", params] as const;
}

/**
 * The fleet view: counts per state (clickable filters), search that narrows as you type, the
 * failed-step filter, sortable columns, pages, and rows kept live from the live stream. The view
 * lives in the URL (`/hosts?q=…&state=failed`), so a link or a reload shows the same hosts.
 */
export function HostsView({
  initialPage,
  initialQuery,
}: {
  initialPage: FleetPage;
  initialQuery: FleetQuery;
}) {
  const [query, setQuery] = useState(initialQuery);
  const [search, setSearch] = useState(initialQuery.q);
  const searchRef = useRef<HTMLInputElement>(null);
  const [initialParams] = useState(() => fleetQueryToParams(initialQuery).toString());

  const params = fleetQueryToParams(query).toString();
  const queryKey = fleetKey(params);
  const refetchInterval = useFallbackRefetchInterval();
  const { data, error, isPlaceholderData } = useQuery({
    queryKey,
    queryFn: () => fetchJson<FleetPage>(`/api/hosts${params ? `?${params}` : ""}`),
    initialData: params === initialParams ? initialPage : undefined,
    // While the next page or search result loads, the last one stays on screen.
    placeholderData: keepPreviousData,
    refetchInterval,
  });
  const fleet = data ?? initialPage;
  useFleetLive(queryKey, query.sort);

  const update = useCallback((patch: Partial<FleetQuery>) => {
    setQuery((previous) => {
      // Any change but paging starts at page 1: page 7 of another filter means nothing.
      const next = { ...previous, page: 1, ...patch };
      const search = fleetQueryToParams(next).toString();
      // replaceState: the address bar follows the view without a server round trip or a
      // history entry per keystroke.
      window.history.replaceState(window.history.state, "", `/hosts${search ? `?${search}` : ""}`);
      return next;
    });
  }, []);

  useEffect(() => {
    const text = search.trim();
    if (text === query.q) return;
    const timer = setTimeout(() => update({ q: text }), SEARCH_DEBOUNCE_MS);
    return () => clearTimeout(timer);
  }, [search, query.q, update]);

  // `/` anywhere on the page (outside a field) goes to the search box.
  useEffect(() => {
    const onKey = (event: globalThis.KeyboardEvent) => {
      if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) return;
      const target = event.target as HTMLElement | null;
      if (target?.closest("input, textarea, select, [contenteditable='true']")) return;
      event.preventDefault();
      searchRef.current?.focus();
      searchRef.current?.select();
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, []);

  const [nowMs, setNowMs] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNowMs(Date.now()), AGO_TICK_MS);
    return () => clearInterval(timer);
  }, []);

  const onSearchKeyDown = (event: KeyboardEvent<HTMLInputElement>) => {
    if (event.key === "ArrowDown") {
      event.preventDefault();
      document.querySelector<HTMLTableRowElement>("[data-testid='hosts-table'] tbody tr")?.focus();
    } else if (event.key === "Escape") {
      if (search) setSearch("");
      else event.currentTarget.blur();
    } else if (event.key === "Enter") {
      // Enter runs the search now instead of after the pause.
      update({ q: search.trim() });
    }
  };
  const toggleState = (state: HostState) =>
    update({
      state: query.state.includes(state)
        ? query.state.filter((s) => s !== state)
        : [...query.state, state],
    });
  const sortBy = (sort: FleetSort) =>
    update(
      sort === query.sort
        ? { sort, dir: effectiveDir(query) === "asc" ? "desc" : "asc" }
        : { sort, dir: undefined },
    );
  const filtered =
    query.q !== "" ||
    query.state.length > 0 ||
    query.failedStep !== "" ||
    query.attention ||
    query.cluster !== "";
  const clear = () => {
    setSearch("");
    update({ q: "", state: [], failedStep: "", attention: false, cluster: "" });
  };
  const fleetIsEmpty =
    !filtered && fleet.total === 0 && Object.values(fleet.countsByState).every((n) => n === 0);

  return (
    <>
      <div className="page-head">
        <h1>Hosts</h1>
        <IfCan role="operator">
          <Link href="/hosts/new" className="button button-primary" data-testid="add-host">
            Add host
          </Link>
        </IfCan>
      </div>
      <FleetCounts
        counts={fleet.countsByState}
        attentionCount={fleet.attentionCount}
        selected={query.state}
        attention={query.attention}
        onToggleState={toggleState}
        onToggleAttention={() => update({ attention: !query.attention })}
      />
      {error && (
        <p className="notice notice-warning" role="status">
          Could not refresh the list: {error.message}. Showing the last known state; it retries on
          its own.
        </p>
      )}
      {fleetIsEmpty ? (
        <div className="empty">
          <p>No hosts yet.</p>
          <IfCan role="operator">
            <p>
              <Link href="/hosts/new">Add the first host</Link> — the console takes it from a fresh
              Debian 13 install to an active Proxmox host.
            </p>
          </IfCan>
        </div>
      ) : (
        <>
          <FleetToolbar
            ref={searchRef}
            search={search}
            onSearch={setSearch}
            onSearchKeyDown={onSearchKeyDown}
            failedStep={query.failedStep}
            failedSteps={fleet.failedSteps}
            onFailedStep={(failedStep) => update({ failedStep })}
            cluster={query.cluster}
            clusters={fleet.clusters}
            onCluster={(cluster) => update({ cluster })}
            filtered={filtered}
            onClear={clear}
            summary={describeRange(fleet.page, fleet.hosts.length, fleet.total)}
            loading={isPlaceholderData || search.trim() !== query.q}
          />
          {fleet.total === 0 ? (
            <div className="empty" data-testid="fleet-no-match">
              <p>No host matches these filters.</p>
              <p>
                <button type="button" className="button" onClick={clear}>
                  Show every host
                </button>
              </p>
            </div>
          ) : fleet.hosts.length === 0 ? (
            // A link to page 9 of a fleet that has 3 pages now.
            <div className="empty" data-testid="fleet-past-end">
              <p>This page is past the end of the list.</p>
              <p>
                <button
                  type="button"
                  className="button"
                  onClick={() => update({ page: fleet.page.totalPages })}
                >
                  Go to page {fleet.page.totalPages}
                </button>
              </p>
            </div>
          ) : (
            <>
              <FleetTable
                hosts={fleet.hosts}
                sort={query.sort}
                dir={effectiveDir(query)}
                nowMs={nowMs}
                onSort={sortBy}
                onLeaveTop={() => searchRef.current?.focus()}
              />
              {fleet.page.totalPages > 1 && (
                <FleetPager
                  page={fleet.page}
                  onPage={(page) => update({ page })}
                  onSize={(limit) => update({ limit })}
                />
              )}
            </>
          )}
        </>
      )}
    </>
  );
}
