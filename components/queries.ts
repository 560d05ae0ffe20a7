"use client";

import { useQuery } from "@tanstack/react-query";
import type { HostDetail } from "@/lib/hosts/get-host";
import { liveKeys } from "./live-keys";
import { useFallbackRefetchInterval } from "./live-provider";

/** GET a JSON API route; a non-2xx answer throws the API's own `error` message. */
export async function fetchJson<T>(url: string): Promise<T> {
  const response = await fetch(url, { headers: { Accept: "application/json" }, cache: "no-store" });
  if (!response.ok) {
    const body = (await response.json().catch(() => null)) as { error?: unknown } | null;
    throw new Error(
      typeof body?.error === "string" ? body.error : `${url} answered ${response.status}`,
    );
  }
  return (await response.json()) as T;
}

export function useHost(hostId: string, initialData: HostDetail) {
  const refetchInterval = useFallbackRefetchInterval();
  return useQuery({
    queryKey: liveKeys.host(hostId),
    queryFn: () => fetchJson<HostDetail>(`/api/hosts/${encodeURIComponent(hostId)}`),
    initialData,
    refetchInterval,
  });
}
