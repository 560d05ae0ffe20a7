import pg from "pg";

/**
 * What the database had committed just before the soak took it away: enough to tell afterwards
 * whether any committed run event, visit, log line or context was lost. Run events, visits and
 * log chunks are append-only (ids and per-run `seq` only grow), so "everything up to here is
 * still there, unchanged in size" is exact; a context may only move forward (its version grows)
 * and is unchanged where the version is.
 */
export type CommittedSnapshot = {
  events: { count: number; maxId: number };
  visits: { count: number; maxId: number };
  logs: Map<string, { maxSeq: number; chunks: number; bytes: number }>;
  contexts: Map<string, { version: number; digest: string }>;
};

/** One connection, one consistent view (REPEATABLE READ), closed at once. */
async function withSnapshotClient<T>(url: string, read: (client: pg.Client) => Promise<T>) {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  client.on("error", () => {}); // the database may go away under it: the query fails instead
  await client.connect();
  try {
    await client.query("begin transaction isolation level repeatable read read only");
    const result = await read(client);
    await client.query("commit");
    return result;
  } finally {
    await client.end().catch(() => {});
  }
}

export function takeSnapshot(url: string): Promise<CommittedSnapshot> {
  return withSnapshotClient(url, async (client) => {
    const count = async (table: string) => {
      const { rows } = await client.query<{ n: number; max: string }>(
        `select count(*)::int as n, coalesce(max(id), 0)::text as max from ${table}`,
      );
      return { count: rows[0]!.n, maxId: Number(rows[0]!.max) };
    };
    const events = await count("events");
    const visits = await count("step_visits");
    const logRows = await client.query<{
      run_id: string;
      max_seq: number;
      chunks: number;
      bytes: string;
    }>(
      `select run_id, max(seq)::int as max_seq, count(*)::int as chunks, sum(bytes)::text as bytes
       from run_log_chunks group by run_id`,
    );
    const contextRows = await client.query<{ id: string; version: number; digest: string }>(
      `select id, context_version as version, md5(context::text) as digest from runs`,
    );
    return {
      events,
      visits,
      logs: new Map(
        logRows.rows.map((r) => [
          r.run_id,
          { maxSeq: r.max_seq, chunks: r.chunks, bytes: Number(r.bytes) },
        ]),
      ),
      contexts: new Map(
        contextRows.rows.map((r) => [r.id, { version: r.version, digest: r.digest }]),
      ),
    };
  });
}

/** What of `before` is missing or changed now; empty when everything committed survived. */
export function compareSnapshot(url: string, before: CommittedSnapshot): Promise<string[]> {
  return withSnapshotClient(url, async (client) => {
    const problems: string[] = [];
    for (const [table, what] of [
      ["events", before.events],
      ["step_visits", before.visits],
    ] as const) {
      const { rows } = await client.query<{ n: number }>(
        `select count(*)::int as n from ${table} where id <= $1`,
        [what.maxId],
      );
      if (rows[0]!.n !== what.count) {
        problems.push(
          `${table}: ${what.count} rows up to id ${what.maxId} before, ${rows[0]!.n} after`,
        );
      }
    }
    const logRows = await client.query<{ run_id: string; chunks: number; bytes: string }>(
      `select c.run_id, count(*)::int as chunks, sum(c.bytes)::text as bytes
       from run_log_chunks c
       join unnest($1::uuid[], $2::int[]) as b(run_id, max_seq) on b.run_id = c.run_id
       where c.seq <= b.max_seq group by c.run_id`,
      [[...before.logs.keys()], [...before.logs.values()].map((l) => l.maxSeq)],
    );
    const logsAfter = new Map(logRows.rows.map((r) => [r.run_id, r]));
    for (const [runId, log] of before.logs) {
      const after = logsAfter.get(runId);
      if (!after || after.chunks !== log.chunks || Number(after.bytes) !== log.bytes) {
        problems.push(
          `run ${runId}: log chunks 1..${log.maxSeq} were ${log.chunks} (${log.bytes} bytes), now ${after?.chunks ?? 0} (${after?.bytes ?? 0} bytes)`,
        );
      }
    }
    const contextRows = await client.query<{ id: string; version: number; digest: string }>(
      `select id, context_version as version, md5(context::text) as digest from runs
       where id = any($1::uuid[])`,
      [[...before.contexts.keys()]],
    );
    const contextsAfter = new Map(contextRows.rows.map((r) => [r.id, r]));
    for (const [runId, context] of before.contexts) {
      const after = contextsAfter.get(runId);
      if (!after) problems.push(`run ${runId}: gone`);
      else if (after.version < context.version) {
        problems.push(
          `run ${runId}: context version ${context.version} before, ${after.version} after`,
        );
      } else if (after.version === context.version && after.digest !== context.digest) {
        problems.push(`run ${runId}: context changed without a new version`);
      }
    }
    return problems;
  });
}

/** Polls until the database takes a connection again; resolves with when it did. */
export async function waitForDatabase(url: string, timeoutMs: number): Promise<number | null> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
    client.on("error", () => {});
    try {
      await client.connect();
      await client.query("select 1");
      return Date.now();
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 250));
    } finally {
      await client.end().catch(() => {});
    }
  }
  return null;
}
