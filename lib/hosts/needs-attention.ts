import { sql, type SQL } from "drizzle-orm";
import type { TemplateCheckState } from "@/lib/steps/onboarding/verify-vm-template";
import type { HostState } from "./host-state";

/**
 * "Needs attention": the one definition, used by the fleet view's filter and count (SQL) and by
 * the row's flag (TypeScript). A host needs attention when an operator has something to do:
 *
 * | reason                 | condition                                                         |
 * | ---------------------- | ----------------------------------------------------------------- |
 * | `failed`               | its latest run failed: Retry, or fix and re-run                    |
 * | `aborted`              | its latest run was aborted and no operator acted on the host since |
 * |                        | (an edit, a pin cleared, …): it was left halfway                   |
 * | `templates missing`    | the pre-sale VmTemplateCheck found required templates missing      |
 * | `templates unchecked`  | the VmTemplateCheck could not ask the host (unreachable, token…)  |
 * | `stalled`              | its run is running but its next tick is overdue by STALLED_AFTER: |
 * |                        | no worker took it (worker down, queue stuck) or a visit hangs      |
 *
 * A retired host needs nothing: it is out of service, its old template check result no longer
 * matters. An onboarding host that is merely slow (a 40-minute template build) is not stalled: its poll
 * visits keep rescheduling the next tick, so the tick is never overdue.
 */
export const ATTENTION_REASONS = [
  "failed",
  "aborted",
  "templates missing",
  "templates unchecked",
  "stalled",
] as const;
export type AttentionReason = (typeof ATTENTION_REASONS)[number];

/** How overdue a due tick must be before the run counts as stalled. */
export const STALLED_AFTER_MINUTES = 5;

export function attentionReasons(host: {
  state: HostState;
  templateCheckState: TemplateCheckState;
  stalled: boolean;
  /** An operator acted on the host after its latest run ended (operatorActedSinceSql). */
  actedSinceRun: boolean;
}): AttentionReason[] {
  const reasons: AttentionReason[] = [];
  if (host.state === "retired") return reasons;
  if (host.state === "failed") reasons.push("failed");
  if (host.state === "aborted" && !host.actedSinceRun) reasons.push("aborted");
  if (host.templateCheckState === "missing") reasons.push("templates missing");
  if (host.templateCheckState === "unknown") reasons.push("templates unchecked");
  if (host.stalled) reasons.push("stalled");
  return reasons;
}

/** SQL twin of the `stalled` condition, over the latest run's columns. */
export function stalledSql(runStatus: SQL, nextTickAt: SQL): SQL {
  return sql`(coalesce(${runStatus} = 'running' and ${nextTickAt} < now() - make_interval(mins => ${STALLED_AFTER_MINUTES}), false))`;
}

/**
 * Whether an operator (anyone but the engine) recorded an event on the host after its latest
 * run ended: the abort itself is recorded before the run ends, so it does not count.
 */
export function operatorActedSinceSql(hostId: SQL, runFinishedAt: SQL): SQL {
  return sql`(coalesce(exists (select 1 from events e where e.host_id = ${hostId}
    and e.actor <> 'engine' and e.at > ${runFinishedAt}), false))`;
}

/**
 * SQL twin of `attentionReasons(host).length > 0`. A template check failure of either kind
 * (missing, could not check) is a non-null `template_check_failure`.
 */
export function needsAttentionSql(columns: {
  state: SQL;
  templateCheckFailure: SQL;
  stalled: SQL;
  actedSinceRun: SQL;
}): SQL {
  return sql`(${columns.state} <> 'retired' and (${columns.state} = 'failed'
    or (case when ${columns.state} = 'aborted' then not ${columns.actedSinceRun} else false end)
    or ${columns.templateCheckFailure} is not null or ${columns.stalled}))`;
}
