import pg from "pg";
import { COULD_NOT_CHECK, TEMPLATES_MISSING } from "@/lib/steps/onboarding/verify-vm-template";

/**
 * A fleet of N hosts with runs in mixed states, written straight into a console database (e2e,
 * bench:fleet, the fleet query's tests). Like every running run, a seeded one has its pending
 * tick job, but due in a day: a console's worker neither runs it nor (recovery) gives it a new
 * one, so these runs only feed the fleet view and never reach for their made-up addresses.
 * Host i (1-based) is named `<prefix>-<i, 5 digits>`:
 *
 * | i mod 20 | latest run                                             | host state |
 * | -------- | ------------------------------------------------------ | ---------- |
 * | 0 … 11   | succeeded                                              | active     |
 * | 12 … 15  | running, at a step with a phase, next tick due soon    | onboarding |
 * | 16 … 18  | failed at a step with a reason                         | failed     |
 * | 19       | running, next tick 20 minutes overdue                  | onboarding (stalled) |
 *
 * Every 50th host (i mod 50 = 0) has templates missing, i mod 50 = 1 "could not check". Each host
 * has `runsPerHost` runs: the latest as above, the older ones finished a day apart.
 */
export const SEED_STEPS = [
  "ConnectHost",
  "CheckOperatingSystem",
  "InstallProxmoxKernel",
  "RebootIntoPveKernel",
  "InstallProxmoxVe",
  "BuildVmTemplate",
] as const;

export type SeededFleet = { prefix: string; hosts: number; runs: number };

export function seedStateOf(i: number): "active" | "onboarding" | "failed" {
  const m = i % 20;
  if (m <= 11) return "active";
  if (m <= 15 || m === 19) return "onboarding";
  return "failed";
}

export async function seedFleet(
  connectionString: string,
  options: { hosts: number; runsPerHost?: number; prefix?: string },
): Promise<SeededFleet> {
  const prefix = options.prefix ?? "fleet";
  const runsPerHost = options.runsPerHost ?? 1;
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    await client.query("begin");
    // Never opened: the worker only unseals credentials of hosts it runs steps on.
    const {
      rows: [credential],
    } = await client.query<{ id: string }>(
      `insert into credentials (kind, sealed) values ('password', 'seeded:fleet-view-only') returning id`,
    );
    await client.query(
      `insert into hosts (name, address, ssh_user, credential_id, node_name, template_check_failure,
                          template_checked_at, created_at, updated_at)
       select $1 || '-' || lpad(i::text, 5, '0'),
              '10.' || (i / 65536) % 256 || '.' || (i / 256) % 256 || '.' || i % 256,
              'root', $2, 'pve-node-' || i,
              case i % 50 when 0 then $4 || ': VMID 9000 does not exist'
                          when 1 then $5 || ': connect ECONNREFUSED 10.0.0.1:8006' end,
              case when i % 50 in (0, 1) then now() - interval '3 minutes' end,
              now() - interval '30 days', now() - interval '30 days'
       from generate_series(1, $3::int) as i`,
      [prefix, credential!.id, options.hosts, TEMPLATES_MISSING, COULD_NOT_CHECK],
    );
    const steps = `array['${SEED_STEPS.join("','")}']`;
    await client.query(
      `insert into runs (host_id, pipeline, status, current_step, phase, failure_reason, failed_step,
                         step_started_at, next_tick_at, created_at, updated_at, finished_at)
       select h.id, 'onboard-host', kind.status::run_status, kind.step, kind.phase,
              kind.reason, kind.failed_step, kind.at, kind.next_tick, kind.at, kind.at, kind.finished
       from hosts h
       cross join lateral (select substring(h.name from '(\\d+)$')::int as i) n
       cross join generate_series(1, $2::int) as k
       cross join lateral (
         select k = $2 as latest,
                now() - make_interval(days => $2 - k) - make_interval(secs => n.i % 600) as at,
                (${steps})[1 + n.i % ${SEED_STEPS.length}] as step
       ) base
       cross join lateral (
         select
           case when not base.latest then case when k % 2 = 0 then 'failed' else 'succeeded' end
                when n.i % 20 <= 11 then 'succeeded'
                when n.i % 20 in (12, 13, 14, 15, 19) then 'running'
                else 'failed' end as status,
           case when base.latest and n.i % 20 in (12, 13, 14, 15, 19) then base.step
                else 'RegisterCapacity' end as step,
           case when base.latest and n.i % 20 in (12, 13, 14, 15, 19)
                then 'apt-get: ' || (n.i % 100) || ' %' end as phase,
           case when base.latest and n.i % 20 in (16, 17, 18)
                then base.step || ' refused: seeded failure ' || n.i
                when not base.latest and k % 2 = 0 then 'an older failure' end as reason,
           case when base.latest and n.i % 20 in (16, 17, 18) then base.step
                when not base.latest and k % 2 = 0 then 'ConnectHost' end as failed_step,
           case when base.latest and n.i % 20 = 19 then now() - interval '20 minutes'
                when base.latest and n.i % 20 in (12, 13, 14, 15) then now() + interval '30 seconds'
           end as next_tick,
           case when base.latest and n.i % 20 in (12, 13, 14, 15, 19) then null
                else base.at end as finished,
           base.at
       ) kind
       where h.name like $1 || '-%'`,
      [prefix, runsPerHost],
    );
    await client.query(
      `select graphile_worker.add_job('run-tick', json_build_object('runId', r.id::text),
                run_at => now() + interval '1 day', max_attempts => 25,
                job_key => 'run:' || r.id::text, job_key_mode => 'replace')
       from runs r join hosts h on h.id = r.host_id
       where h.name like $1 || '-%' and r.status = 'running'`,
      [prefix],
    );
    await client.query("commit");
    await client.query("analyze hosts; analyze runs");
    return { prefix, hosts: options.hosts, runs: options.hosts * runsPerHost };
  } catch (error) {
    await client.query("rollback").catch(() => {});
    throw error;
  } finally {
    await client.end();
  }
}

/** Removes a seeded fleet (its hosts, their runs, jobs and events, the shared credential). */
export async function removeFleet(connectionString: string, prefix: string): Promise<void> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    await client.query("begin");
    const like = `${prefix}-%`;
    const hostIds = `select id from hosts where name like $1`;
    const runIds = `select id from runs where host_id in (${hostIds})`;
    await client.query(
      `select graphile_worker.remove_job('run:' || id::text) from (${runIds}) seeded`,
      [like],
    );
    await client.query(`delete from step_visits where run_id in (${runIds})`, [like]);
    await client.query(
      `delete from events where host_id in (${hostIds}) or run_id in (${runIds})`,
      [like],
    );
    await client.query(`delete from runs where host_id in (${hostIds})`, [like]);
    await client.query(
      `with gone as (delete from hosts where name like $1 returning credential_id)
       delete from credentials where id in (select credential_id from gone)`,
      [like],
    );
    await client.query("commit");
  } catch (error) {
    await client.query("rollback").catch(() => {});
    throw error;
  } finally {
    await client.end();
  }
}
