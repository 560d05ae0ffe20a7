import { sql, type SQL } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { effectiveDir, HOST_STATES, type FleetQuery } from "./fleet-schemas";
import type { HostState } from "./host-state";
import { hostStateRankSql, hostStateSql } from "./host-state-sql";
import { listHosts, type HostSummary } from "./list-hosts";
import { needsAttentionSql, operatorActedSinceSql, stalledSql } from "./needs-attention";

/**
 * One page of the fleet view: `GET /api/hosts` and the hosts page.
 *
 * - `hosts`: the page's rows, in the requested order (HostSummary, no secrets).
 * - `total`: hosts matching every filter (what the pages count).
 * - `countsByState`: hosts per state matching the search and the other filters but not the state
 *   filter, so the state chips say how many each would show.
 * - `attentionCount`: the same set, needing attention (lib/hosts/needs-attention.ts).
 * - `failedSteps`: failed hosts matching the search, per step they failed at (most first).
 * - `clusters`: every Proxmox cluster the fleet's hosts belong to, with how many, whatever the
 *   filters (the cluster filter's choices).
 * - `page`: `{ number, size, totalPages }` (1-based; `number` may exceed `totalPages` when the
 *   fleet shrank under a link; the rows are then empty).
 */
export type FleetPage = {
  hosts: HostSummary[];
  total: number;
  countsByState: Record<HostState, number>;
  attentionCount: number;
  failedSteps: { step: string; count: number }[];
  clusters: { name: string; count: number }[];
  page: { number: number; size: number; totalPages: number };
};

/** `%` and `_` are LIKE wildcards and `\` its escape: a search for `pve_1` means exactly that. */
export function likeContains(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

function orderBy(query: FleetQuery): SQL {
  const dir = effectiveDir(query) === "desc" ? sql`desc` : sql`asc`;
  // The name breaks ties (and is unique), so a page boundary never splits or repeats a host.
  switch (query.sort) {
    case "name":
      return sql`name ${dir}`;
    case "address":
      return sql`address ${dir}, name asc`;
    case "state":
      return sql`${hostStateRankSql(sql`state`)} ${dir}, name asc`;
    case "updated":
      return sql`updated_at ${dir}, name asc`;
  }
}

/**
 * The latest run per host is a `LATERAL … ORDER BY created_at DESC LIMIT 1` served by the
 * index runs(host_id, created_at) read backwards; state, "stalled" and "needs attention" are
 * derived in SQL, so filters, counts and sorting never pull the fleet into JS. Two statements:
 * this one (facets and the page's ids, over one materialized scan) and listHosts for the page's
 * rows.
 */
export async function queryFleet(db: Database, query: FleetQuery): Promise<FleetPage> {
  const search = query.q
    ? sql`and (h.name ilike ${likeContains(query.q)} or h.address ilike ${likeContains(query.q)}
               or h.node_name ilike ${likeContains(query.q)})`
    : sql``;
  const clusterFilter = query.cluster ? sql`and h.cluster_name = ${query.cluster}` : sql``;
  const otherFilters = sql.join(
    [
      sql`true`,
      ...(query.failedStep ? [sql`failed_step = ${query.failedStep}`] : []),
      ...(query.attention ? [sql`attention`] : []),
    ],
    sql` and `,
  );
  const stateFilter =
    query.state.length > 0
      ? sql`state in (${sql.join(
          query.state.map((s) => sql`${s}`),
          sql`, `,
        )})`
      : sql`true`;
  const offset = (query.page - 1) * query.limit;

  const result = await db.execute<{
    counts: Record<string, number>;
    attention_count: number;
    failed_steps: { step: string; count: number }[];
    clusters: { name: string; count: number }[];
    total: number;
    ids: string[];
  }>(sql`
    with base as materialized (
      select h.id, h.name, h.address, coalesce(r.updated_at, h.updated_at) as updated_at,
             r.failed_step, state.value as state,
             ${needsAttentionSql({
               state: sql`state.value`,
               templateCheckFailure: sql`h.template_check_failure`,
               stalled: stalledSql(sql`r.status`, sql`r.next_tick_at`),
               actedSinceRun: operatorActedSinceSql(sql`h.id`, sql`r.finished_at`),
             })} as attention
      from hosts h
      left join lateral (
        select status, pipeline, failed_step, failure_reason, finished_at, updated_at, next_tick_at
        from runs
        where runs.host_id = h.id order by runs.created_at desc limit 1
      ) r on true
      cross join lateral (select ${hostStateSql({
        retiredAt: sql`h.retired_at`,
        runStatus: sql`r.status`,
        pipeline: sql`r.pipeline`,
        failureReason: sql`r.failure_reason`,
      })} as value) state
      where true ${search} ${clusterFilter}
    ),
    faceted as (select * from base where ${otherFilters})
    select
      (select coalesce(json_object_agg(state, n), '{}'::json)
         from (select state, count(*)::int as n from faceted group by state) s) as counts,
      (select count(*)::int from faceted where attention) as attention_count,
      (select coalesce(json_agg(json_build_object('step', failed_step, 'count', n)
                                order by n desc, failed_step), '[]'::json)
         from (select failed_step, count(*)::int as n from base
               where state = 'failed' and failed_step is not null group by failed_step) f)
        as failed_steps,
      (select coalesce(json_agg(json_build_object('name', cluster_name, 'count', n)
                                order by cluster_name), '[]'::json)
         from (select cluster_name, count(*)::int as n from hosts
               where cluster_name is not null group by cluster_name) c) as clusters,
      (select count(*)::int from faceted where ${stateFilter}) as total,
      array(select id from faceted where ${stateFilter}
            order by ${orderBy(query)} limit ${query.limit} offset ${offset}) as ids`);
  const row = result.rows[0]!;
  const countsByState = Object.fromEntries(
    HOST_STATES.map((state) => [state, row.counts[state] ?? 0]),
  ) as Record<HostState, number>;
  return {
    hosts: await listHosts(db, { hostIds: row.ids }),
    total: row.total,
    countsByState,
    attentionCount: row.attention_count,
    failedSteps: row.failed_steps,
    clusters: row.clusters,
    page: {
      number: query.page,
      size: query.limit,
      totalPages: Math.max(1, Math.ceil(row.total / query.limit)),
    },
  };
}
