"use client";

import { useVirtualizer } from "@tanstack/react-virtual";
import {
  useCallback,
  useDeferredValue,
  useEffect,
  useLayoutEffect,
  useMemo,
  useRef,
  useState,
  type KeyboardEvent,
} from "react";
import type { RunDetail } from "@/lib/runs/get-run";
import { PhaseLine, type RunOutcomeLine } from "../phase-line";
import { LogRow } from "./log-row";
import { buildRows, defaultOpen, searchLines, type Section } from "./model";
import { useRunLog, type StreamState } from "./use-run-log";
import "./log-viewer.css";

/** Every row is one line high: fixed heights keep 100 000 rows cheap to lay out and to jump in. */
export const ROW_HEIGHT = 20;
const AT_BOTTOM_PX = 8;

const STATE_LABEL: Record<StreamState, string> = {
  loading: "Loading…",
  live: "Live",
  ended: "Complete",
  reconnecting: "Reconnecting…",
};

function lineFromHash(hash: string): number | null {
  const match = /^#L(\d+)$/.exec(hash);
  return match ? Number(match[1]) : null;
}

/**
 * The run's build log: virtualized, streamed live, sections per step, follow mode, permalinks,
 * search, timestamps, download. Keyboard: `/` search, Enter / Shift+Enter next / previous
 * match, Escape leaves the search, End jumps to the latest line, Home to the first.
 */
export function LogViewer({
  run,
  outcome = null,
}: {
  run: RunDetail;
  /** A finished run's own verdict (a power run's) for the header, in place of generic words. */
  outcome?: RunOutcomeLine | null;
}) {
  const { model, version, state } = useRunLog(run.id, run.status === "running");
  const scrollRef = useRef<HTMLDivElement>(null);
  const searchRef = useRef<HTMLInputElement>(null);
  // Following the newest line (null), or paused with this many lines on hand: "N new" counts from it.
  const [pausedAt, setPausedAt] = useState<number | null>(null);
  const follow = pausedAt === null;
  const [overrides, setOverrides] = useState<ReadonlyMap<number, boolean>>(new Map());
  const [showTime, setShowTime] = useState(false);
  const [queryInput, setQueryInput] = useState("");
  const query = useDeferredValue(queryInput);
  const [matchIndex, setMatchIndex] = useState(0);
  const [target, setTarget] = useState<number | null>(null);
  const [pendingJump, setPendingJump] = useState<number | null>(null);

  const lineCount = model.lines.length;
  const sectionCount = model.sections.length;

  const isOpen = useMemo(() => {
    const fallback = defaultOpen(model.sections, run.status, run.failedStep);
    return (section: Section) => overrides.get(section.index) ?? fallback(section);
    // `version` stands for the model's content, which is mutated in place.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [model, version, sectionCount, run.status, run.failedStep, overrides]);

  const rows = useMemo(
    () => buildRows(model.sections, isOpen),
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [model, version, isOpen],
  );

  const matches = useMemo(
    () => searchLines(model.lines, query),
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [model, version, query],
  );
  const currentMatch =
    matches.length > 0 ? matches[Math.min(matchIndex, matches.length - 1)] : undefined;

  // The virtualizer's functions stay inside this component (never passed to memoized children).
  // eslint-disable-next-line react-hooks/incompatible-library
  const virtualizer = useVirtualizer({
    count: rows.length,
    getScrollElement: () => scrollRef.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: 20,
  });

  // Where this component last put the scroll box itself. Its own writes say nothing about
  // following: a permalink revealed while the backlog still arrives lands near the bottom of
  // what is loaded so far, and reading that as "the operator scrolled down" resumed follow and
  // carried the line away.
  const ownScrollTop = useRef<number | null>(null);
  const scrollBoxTo = useCallback((top: number) => {
    const box = scrollRef.current;
    if (!box) return;
    box.scrollTop = top;
    ownScrollTop.current = box.scrollTop; // as the browser clamped it
  }, []);

  // Follow: stay at the bottom as lines arrive.
  useLayoutEffect(() => {
    const box = scrollRef.current;
    if (box && follow) scrollBoxTo(box.scrollHeight);
  }, [rows, follow, scrollBoxTo]);

  const pauseFollow = useCallback(() => setPausedAt((at) => at ?? model.lines.length), [model]);

  const onScroll = useCallback(() => {
    const box = scrollRef.current;
    if (!box) return;
    if (ownScrollTop.current !== null && Math.abs(box.scrollTop - ownScrollTop.current) < 1) return;
    ownScrollTop.current = null;
    const atBottom = box.scrollHeight - box.scrollTop - box.clientHeight <= AT_BOTTOM_PX;
    if (atBottom) setPausedAt(null);
    else pauseFollow();
  }, [pauseFollow]);

  const jumpToLatest = useCallback(() => {
    setPausedAt(null);
    const box = scrollRef.current;
    if (box) scrollBoxTo(box.scrollHeight);
  }, [scrollBoxTo]);

  /** Shows line `index` (of model.lines): opens its section, scrolls it to the middle. */
  const reveal = useCallback(
    (index: number) => {
      const line = model.lines[index];
      if (!line) return;
      const section = model.sections[line.section];
      if (section && !isOpen(section)) {
        setOverrides((current) => new Map(current).set(section.index, true));
      }
      pauseFollow();
      setPendingJump(index);
    },
    [model, isOpen, pauseFollow],
  );

  // After a reveal, the rows include the line: scroll it to the middle. Rows have one fixed
  // height, so the offset is arithmetic, and the scroll position keeps a single owner (this
  // component, as in follow mode). The virtualizer's own scroll commands keep retargeting for up
  // to seconds afterwards, beside our direct writes; a permalink opened once in CI stayed
  // without its line on screen.
  useLayoutEffect(() => {
    if (pendingJump === null) return;
    const row = rows.indexOf(pendingJump);
    const box = scrollRef.current;
    if (row < 0 || !box) return;
    scrollBoxTo(Math.max(0, row * ROW_HEIGHT - (box.clientHeight - ROW_HEIGHT) / 2));
    setPendingJump(null);
  }, [pendingJump, rows, scrollBoxTo]);

  // Permalinks: #L123 on load and on every hash change.
  useEffect(() => {
    const read = () => setTarget(lineFromHash(window.location.hash));
    read();
    window.addEventListener("hashchange", read);
    return () => window.removeEventListener("hashchange", read);
  }, []);
  const revealedTarget = useRef<number | null>(null);
  useEffect(() => {
    if (target === null || revealedTarget.current === target) return;
    const index = model.indexOfLine(target);
    if (index < 0) return; // not here yet: the backlog is still arriving
    revealedTarget.current = target;
    reveal(index);
  }, [target, model, version, reveal]);

  const goToMatch = useCallback(
    (next: number) => {
      if (matches.length === 0) return;
      const wrapped = (next + matches.length) % matches.length;
      setMatchIndex(wrapped);
      reveal(matches[wrapped]!.line);
    },
    [matches, reveal],
  );

  // A new query starts at its first match.
  useEffect(() => {
    setMatchIndex(0);
    if (query && matches.length > 0) reveal(matches[0]!.line);
    // Only when the query changes, not when more lines arrive.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [query]);

  const toggleSection = (section: Section) =>
    setOverrides((current) => new Map(current).set(section.index, !isOpen(section)));

  const onSearchKey = (event: KeyboardEvent<HTMLInputElement>) => {
    if (event.key === "Enter") {
      event.preventDefault();
      goToMatch(matchIndex + (event.shiftKey ? -1 : 1));
    } else if (event.key === "Escape") {
      setQueryInput("");
      scrollRef.current?.focus();
    }
  };

  const onViewerKey = (event: KeyboardEvent<HTMLDivElement>) => {
    if (event.target instanceof HTMLInputElement) return;
    if (event.key === "/") {
      event.preventDefault();
      searchRef.current?.focus();
    } else if (event.key === "End") {
      event.preventDefault();
      jumpToLatest();
    } else if (event.key === "Home") {
      event.preventDefault();
      pauseFollow();
      scrollBoxTo(0);
    }
  };

  const newLines = pausedAt === null ? 0 : Math.max(0, lineCount - pausedAt);

  return (
    <div
      className="log-viewer"
      data-testid="log-viewer"
      data-line-count={lineCount}
      data-stream-state={state}
      data-follow={follow}
      onKeyDown={onViewerKey}
    >
      <div className="log-viewer-head">
        <div className="log-viewer-phase">
          <PhaseLine run={run} testId="log-phase-line" outcome={outcome} brief />
          <span className={`log-stream log-stream-${state}`} data-testid="log-stream-state">
            {STATE_LABEL[state]}
          </span>
          <span className="muted small" data-testid="log-line-total">
            {lineCount.toLocaleString("en")} lines
          </span>
        </div>
        <div className="log-viewer-tools">
          <div className="log-search" role="search">
            <input
              ref={searchRef}
              type="search"
              placeholder="Search log  ( / )"
              aria-label="Search the log"
              value={queryInput}
              onChange={(event) => setQueryInput(event.target.value)}
              onKeyDown={onSearchKey}
              data-testid="log-search"
            />
            <span className="log-search-count" aria-live="polite" data-testid="log-search-count">
              {query
                ? matches.length > 0
                  ? `${Math.min(matchIndex, matches.length - 1) + 1} of ${matches.length}`
                  : "no matches"
                : ""}
            </span>
            <button
              type="button"
              className="button button-small"
              onClick={() => goToMatch(matchIndex - 1)}
              disabled={matches.length === 0}
              aria-label="Previous match"
              title="Previous match (Shift+Enter)"
              data-testid="log-search-prev"
            >
              ↑
            </button>
            <button
              type="button"
              className="button button-small"
              onClick={() => goToMatch(matchIndex + 1)}
              disabled={matches.length === 0}
              aria-label="Next match"
              title="Next match (Enter)"
              data-testid="log-search-next"
            >
              ↓
            </button>
          </div>
          <label className="log-toggle">
            <input
              type="checkbox"
              checked={showTime}
              onChange={(event) => setShowTime(event.target.checked)}
              data-testid="log-timestamps"
            />
            Timestamps
          </label>
          <a
            className="button button-small"
            href={`/api/runs/${encodeURIComponent(run.id)}/log?download=1`}
            download={`run-${run.id}.log`}
            data-testid="log-download"
          >
            Download raw log
          </a>
        </div>
      </div>

      <div className="log-viewer-body">
        <div
          ref={scrollRef}
          className="log-scroll"
          tabIndex={0}
          role="log"
          aria-label="Run log"
          aria-live="off"
          onScroll={onScroll}
          // As tall as its rows (a collapsed summary stays small), up to the CSS max-height.
          style={{ height: Math.max(3, rows.length) * ROW_HEIGHT + 2 }}
          data-testid="log-scroll"
        >
          {rows.length === 0 ? (
            <p className="log-empty">
              {state === "loading" ? "Loading the log…" : "No log lines yet."}
            </p>
          ) : (
            <div className="log-rows" role="list" style={{ height: virtualizer.getTotalSize() }}>
              {virtualizer.getVirtualItems().map((item) => {
                const value = rows[item.index]!;
                const style = {
                  transform: `translateY(${item.start}px)`,
                  height: ROW_HEIGHT,
                };
                if (value < 0) {
                  const section = model.sections[-value - 1]!;
                  const open = isOpen(section);
                  return (
                    <div
                      key={`s${section.index}`}
                      className={`log-section${section.aborted ? " log-section-aborted" : section.failed ? " log-section-failed" : ""}`}
                      data-state={section.aborted ? "aborted" : section.failed ? "failed" : "ok"}
                      style={style}
                      role="listitem"
                      data-testid={`log-section-${section.step}`}
                    >
                      <button
                        type="button"
                        aria-expanded={open}
                        onClick={() => toggleSection(section)}
                        className="log-section-toggle"
                      >
                        <span aria-hidden="true">{open ? "▾" : "▸"}</span> {section.step}
                        <span className="log-section-count">
                          {section.end - section.start} lines
                          {section.aborted ? " · aborted" : section.failed ? " · failed" : ""}
                        </span>
                      </button>
                    </div>
                  );
                }
                const line = model.lines[value]!;
                return (
                  <LogRow
                    key={line.n}
                    line={line}
                    query={query}
                    currentMatchStart={currentMatch?.line === value ? currentMatch.start : null}
                    showTime={showTime}
                    target={target === line.n}
                    style={style}
                  />
                );
              })}
            </div>
          )}
        </div>
        {!follow && (
          <button
            type="button"
            className="button button-small log-jump"
            onClick={jumpToLatest}
            data-testid="log-jump-latest"
          >
            ↓ Jump to latest{newLines > 0 ? ` (${newLines.toLocaleString("en")} new)` : ""}
          </button>
        )}
      </div>
    </div>
  );
}
