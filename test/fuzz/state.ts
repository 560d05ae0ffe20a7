import type pg from "pg";

/**
 * Tables whose every row is compared. Left out: the audit log (a refused request is recorded
 * there by design) and sign-in bookkeeping (sessions' and tokens' last-use times, login
 * failures), which every authenticated request may touch.
 */
const IGNORED = new Set(["audit_log", "sessions", "api_tokens", "login_failures"]);

export type StateFingerprint = {
  /** An md5 of every row of every compared table, and of the queued jobs. */
  digest: string;
  /** Runs and queued jobs: what would carry a command to a host. */
  runs: number;
  jobs: number;
};

const queries = new WeakMap<pg.Pool, string>();

async function fingerprintQuery(pool: pg.Pool): Promise<string> {
  const known = queries.get(pool);
  if (known) return known;
  const { rows: tables } = await pool.query<{ name: string }>(
    `select table_name as name from information_schema.tables
     where table_schema = 'public' and table_type = 'BASE TABLE' order by 1`,
  );
  const parts = tables
    .filter((table) => !IGNORED.has(table.name))
    .map(
      ({ name }) =>
        `select '${name}' as t, count(*) as n, md5(coalesce(string_agg(x::text, '|' order by x::text), '')) as h from "${name}" x`,
    );
  parts.push(
    `select 'jobs' as t, count(*) as n, md5(coalesce(string_agg(j.id::text || ':' || coalesce(j.key, ''), '|' order by j.id), '')) as h from graphile_worker._private_jobs j`,
  );
  const query = parts.join(" union all ");
  queries.set(pool, query);
  return query;
}

/**
 * The console's state in one query. Equal fingerprints before and after a request mean the
 * request changed nothing: no row, no run, no job (a job is how a run reaches a host).
 */
export async function stateFingerprint(pool: pg.Pool): Promise<StateFingerprint> {
  const { rows } = await pool.query<{ t: string; n: string; h: string }>(
    await fingerprintQuery(pool),
  );
  const count = (table: string) => Number(rows.find((row) => row.t === table)?.n ?? 0);
  return {
    digest: rows.map((row) => `${row.t}:${row.n}:${row.h}`).join(","),
    runs: count("runs"),
    jobs: count("jobs"),
  };
}
