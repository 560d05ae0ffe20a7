"use client";

import { useRouter } from "next/navigation";
import { useEffect, useState } from "react";

const REFRESH_MS = 5_000;

/**
 * Keeps the newest page of the audit log current while it is on screen: the server component
 * re-renders every few seconds (only while the tab is visible), so a retry or abort by a
 * colleague shows up without a reload. Older pages stay still; paging is reading history.
 */
export function AuditLiveRefresh() {
  const router = useRouter();
  const [live, setLive] = useState(true);
  useEffect(() => {
    if (!live) return;
    const timer = setInterval(() => {
      if (document.visibilityState === "visible") router.refresh();
    }, REFRESH_MS);
    return () => clearInterval(timer);
  }, [live, router]);
  return (
    <label className="small muted">
      <input
        type="checkbox"
        checked={live}
        onChange={(event) => setLive(event.target.checked)}
        data-testid="audit-live"
      />{" "}
      Refresh every {REFRESH_MS / 1000} s
    </label>
  );
}
