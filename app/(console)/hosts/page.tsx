import type { Metadata } from "next";
import { HostsView } from "@/components/hosts-view";
import { requirePageActor } from "@/lib/auth/actor";
import { getDb } from "@/lib/db/client";
import { queryFleet } from "@/lib/hosts/fleet-query";
import { DEFAULT_FLEET_QUERY, fleetParamsObject, ZFleetQuery } from "@/lib/hosts/fleet-schemas";

export const dynamic = "force-dynamic";

export const metadata: Metadata = { title: "Hosts" };

type SearchParams = Promise<Record<string, string | string[] | undefined>>;

/**
 * The first page is rendered on the server, so the list is on screen with the HTML; the client
 * takes over for search, filters and live updates. A URL with a bad parameter (an old bookmark)
 * shows the whole fleet rather than an error page.
 */
export default async function HostsPage({ searchParams }: { searchParams: SearchParams }) {
  await requirePageActor("viewer", "/hosts");
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(await searchParams)) {
    for (const v of Array.isArray(value) ? value : value === undefined ? [] : [value])
      params.append(key, v);
  }
  const parsed = ZFleetQuery.safeParse(fleetParamsObject(params));
  const query = parsed.success ? parsed.data : DEFAULT_FLEET_QUERY;
  const page = await queryFleet(getDb(), query);
  // Keyed by the query: a link to another filter of this page (a row's cluster) is a client
  // navigation that keeps the view mounted, and its state would keep the old filter.
  return <HostsView key={params.toString()} initialPage={page} initialQuery={query} />;
}
