"use client";

import { useRouter } from "next/navigation";
import { useEffect, useRef } from "react";
import type { LiveList } from "@/lib/live/notify";
import { useListLiveMessages, useLiveStatus } from "./live-provider";

/** Changes arriving within this window re-render the page once. */
const COALESCE_MS = 250;

/**
 * Keeps a server-rendered list page (the catalog, the users and their tokens) current: when the
 * live stream says its records changed — a colleague's change, or one made through the API — the
 * page re-renders on the server (`router.refresh`, no reload: forms keep what is typed). When the
 * stream comes back after a drop it re-renders too: what changed meanwhile was not heard.
 */
export function ListLiveRefresh({ list }: { list: LiveList }) {
  const router = useRouter();
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);
  const refresh = () => {
    timer.current ??= setTimeout(() => {
      timer.current = null;
      router.refresh();
    }, COALESCE_MS);
  };
  useListLiveMessages((changed) => {
    if (changed === list) refresh();
  });
  const status = useLiveStatus();
  const wasLive = useRef(false);
  const everLive = useRef(false);
  useEffect(() => {
    // Back after a drop: what changed meanwhile was not heard. (The first time the stream is
    // live the page was just rendered: nothing to catch up.)
    if (status === "live" && everLive.current && !wasLive.current) refresh();
    wasLive.current = status === "live";
    everLive.current ||= status === "live";
    // eslint-disable-next-line react-hooks/exhaustive-deps -- refresh only reads refs and the router
  }, [status]);
  useEffect(
    () => () => {
      if (timer.current) clearTimeout(timer.current);
    },
    [],
  );
  return null;
}
