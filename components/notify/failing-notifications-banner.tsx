"use client";

import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import type { FailingTargetSummary } from "@/lib/notify/deliveries";
import { useFallbackRefetchInterval } from "../live-provider";
import { fetchJson } from "../queries";
import { notifyKeys } from "./notify-keys";

/**
 * The dashboard's word on notifications: nothing while every message arrived, a red notice per
 * target whose deliveries are failing until they succeed or someone acknowledges them.
 */
export function FailingNotificationsBanner({ initial }: { initial: FailingTargetSummary[] }) {
  const refetchInterval = useFallbackRefetchInterval();
  const { data: failing } = useQuery({
    queryKey: notifyKeys.failing,
    queryFn: async () =>
      (await fetchJson<{ failing: FailingTargetSummary[] }>("/api/notifications/failing")).failing,
    initialData: initial,
    refetchInterval,
  });
  if (failing.length === 0) return null;
  return (
    <div className="notice notice-error" role="alert" data-testid="notifications-failing">
      {failing.map((f) => (
        <p key={f.targetId}>
          <strong>Notifications to {f.targetName} are failing</strong>: {f.failing} not delivered
          {f.lastError ? ` — last: ${f.lastError}` : ""}.{" "}
          <Link href={`/power/notifications#target-${f.targetId}`}>See the target</Link> to test it,
          fix it or acknowledge.
        </p>
      ))}
    </div>
  );
}
