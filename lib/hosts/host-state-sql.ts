import { sql, type SQL } from "drizzle-orm";
import { ABORT_REASON } from "@/lib/pipeline/abort-reason";
import { DECOMMISSION_HOST } from "@/lib/steps/onboarding/decommission/name";

/**
 * SQL twin of `hostStateOf` (host-state.ts), over the host's `retired_at` and its latest run's
 * status and pipeline, so the fleet view filters, counts and sorts by state in Postgres instead
 * of deriving it in JS for every host. fleet-query.int.test.ts holds the two to the same answer
 * for every combination.
 */
export function hostStateSql(columns: {
  retiredAt: SQL;
  runStatus: SQL;
  pipeline: SQL;
  failureReason: SQL;
}): SQL {
  return sql`(case
    when ${columns.retiredAt} is not null then 'retired'
    when ${columns.runStatus} = 'succeeded' then 'active'
    when ${columns.runStatus} = 'failed' and ${columns.failureReason} = ${ABORT_REASON}
      then 'aborted'
    when ${columns.runStatus} = 'failed' then 'failed'
    when ${columns.runStatus} = 'running' and ${columns.pipeline} = ${DECOMMISSION_HOST}
      then 'decommissioning'
    else 'onboarding' end)`;
}

/**
 * The order `sort=state` uses (ascending): what needs a look first (the same order as
 * HOST_STATES). Unknown states last, so a state added without a rank still shows up.
 */
export function hostStateRankSql(state: SQL): SQL {
  return sql`(case ${state} when 'failed' then 0 when 'aborted' then 1 when 'onboarding' then 2
    when 'decommissioning' then 3 when 'active' then 4 when 'retired' then 5 else 9 end)`;
}
