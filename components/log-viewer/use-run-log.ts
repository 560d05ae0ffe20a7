"use client";

import { useEffect, useRef, useState } from "react";
import { leaveForSignIn } from "../leave-for-sign-in";
import { LogModel, type IncomingChunk } from "./model";

/**
 * - loading: the stream is open, the backlog is arriving
 * - live:    caught up; new lines arrive as they are written
 * - ended:   the run stopped and every line is here; the stream is closed
 * - reconnecting: the stream dropped; it resumes after the last chunk received
 */
export type StreamState = "loading" | "live" | "ended" | "reconnecting";

/**
 * Opens the run's log stream (one EventSource per viewer) and feeds a LogModel. The model is
 * mutated in place; `version` changes at most once per animation frame, so a 100 000-line
 * backlog arriving in a hundred chunks renders a handful of times, not a hundred.
 *
 * While the run runs the stream stays open; on `end` it closes. If the run runs again (Retry
 * re-enters the same run), it reopens after the last chunk it has (`?after=`); EventSource's
 * own reconnects send `Last-Event-ID`. Either way no line arrives twice or goes missing.
 */
export function useRunLog(runId: string, running: boolean) {
  // One model per viewer, mutated in place by the stream (never during render).
  const [model] = useState(() => new LogModel());
  const [version, setVersion] = useState(0);
  const [state, setState] = useState<StreamState>("loading");
  // Bumped when the run starts running again after it stopped: the stream reopens then.
  const [generation, setGeneration] = useState(0);
  const wasRunning = useRef(running);
  useEffect(() => {
    if (running && !wasRunning.current) setGeneration((g) => g + 1);
    wasRunning.current = running;
  }, [running]);

  useEffect(() => {
    let disposed = false;
    let source: EventSource | null = null;
    let frame: number | null = null;
    let retryTimer: ReturnType<typeof setTimeout> | null = null;
    let attempt = 0;

    const render = () => {
      frame = null;
      setVersion((v) => v + 1);
    };
    const scheduleRender = () => {
      frame ??= requestAnimationFrame(render);
    };

    const open = () => {
      if (disposed) return;
      const es = new EventSource(
        `/api/runs/${encodeURIComponent(runId)}/log/stream?after=${model.lastSeq}`,
      );
      source = es;
      es.onopen = () => {
        attempt = 0;
      };
      es.addEventListener("live", () => setState("live"));
      es.addEventListener("chunk", (event) => {
        const chunk = JSON.parse((event as MessageEvent<string>).data) as IncomingChunk;
        if (model.append(chunk)) scheduleRender();
      });
      es.addEventListener("end", () => {
        es.close();
        setState("ended");
        scheduleRender();
      });
      es.addEventListener("signed-out", () => {
        disposed = true;
        es.close();
        leaveForSignIn();
      });
      es.onerror = () => {
        if (disposed) return;
        setState("reconnecting");
        // EventSource retries a dropped stream by itself (with Last-Event-ID) but gives up on an
        // HTTP error; then reopen after what we have, with backoff.
        if (es.readyState === EventSource.CLOSED) {
          attempt += 1;
          retryTimer = setTimeout(open, Math.min(30_000, 1_000 * 2 ** Math.min(attempt, 5)));
        }
      };
    };

    open();
    return () => {
      disposed = true;
      source?.close();
      if (frame !== null) cancelAnimationFrame(frame);
      if (retryTimer) clearTimeout(retryTimer);
    };
  }, [runId, generation, model]);

  return { model, version, state };
}
