"use client";

import { useQuery } from "@tanstack/react-query";
import type { CrashLoopReport } from "@/lib/supervisor/crash-loops";
import { crashLoopRecheckMs, crashLoopSentence } from "./crash-loop-banner-text";
import { formatClock } from "./format";
import { liveKeys } from "./live-keys";
import { FALLBACK_POLL_MS, useLiveStatus } from "./live-provider";
import { fetchJson } from "./queries";

/**
 * On every console page: which of the console's own processes (worker, web server, database)
 * `npm start` keeps restarting. Appears with the restart's live message, goes once the loop is
 * over; nothing shows while all is calm.
 */
export function CrashLoopBanner() {
  const live = useLiveStatus() === "live";
  const { data } = useQuery({
    queryKey: liveKeys.crashLoops,
    queryFn: () => fetchJson<{ crashLoops: CrashLoopReport[] }>("/api/crash-loops"),
    refetchInterval: (query) =>
      crashLoopRecheckMs(query.state.data?.crashLoops ?? [], live, FALLBACK_POLL_MS),
  });
  const loops = data?.crashLoops ?? [];
  if (loops.length === 0) return null;
  return (
    <div className="notice notice-error" role="alert" data-testid="crash-loop-banner">
      {loops.map((loop) => (
        <p key={loop.process} suppressHydrationWarning>
          {crashLoopSentence(loop, formatClock(loop.lastEndedAt))}
        </p>
      ))}
    </div>
  );
}
