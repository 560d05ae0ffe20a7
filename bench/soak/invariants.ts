import fs from "node:fs";
import pg from "pg";
import { consolePages } from "@/e2e/console-pages";
import { signIn } from "@/lib/auth/sign-in";
import { SESSION_COOKIE } from "@/lib/auth/session-cookie";
import { createDb } from "@/lib/db/client";
import type { SoakAccounts } from "./accounts";
import { leftoversOf } from "./build-processes";
import { POSTGRES_GONE } from "@/lib/supervisor/embedded-postgres-service";
import type { FaultCount } from "./chaos";
import type { SupervisorRestart } from "./console-under-test";
import type { DurabilityReport, Recovery } from "./faults";
import { processTable } from "./proc";
import { MAX_SILENCE_MS, type ProbeReport } from "./prober";
import type { Fault } from "./schedule";
import type { SoakContext } from "./soak-context";
import { STUCK_AFTER_MS, stuckRuns, type WatchReport } from "./watch";

export type Verdict = { invariant: string; held: boolean; detail: string };

const list = (items: readonly string[], max = 5) =>
  items.slice(0, max).join("; ") + (items.length > max ? `; … ${items.length - max} more` : "");

/** The console stayed up and answering; nobody had to start it again. */
export function consoleVerdicts(
  ctx: SoakContext,
  probes: ProbeReport,
  faults: ReadonlyMap<Fault, FaultCount>,
): Verdict[] {
  const restarts = ctx.console.restarts();
  const tally = new Map<string, number>();
  for (const { service } of restarts) tally.set(service, (tally.get(service) ?? 0) + 1);
  const exited = ctx.console.exited();
  const unexpected = [...probes.unexpected].map(([status, n]) => `${status} ×${n}`);
  const unexplained = unexplainedEndings(restarts, faults);
  return [
    {
      invariant: `the console never went more than ${MAX_SILENCE_MS / 1000} s without answering`,
      held: probes.tooLong.length === 0,
      detail:
        `longest silence ${(probes.longestSilenceMs / 1000).toFixed(1)} s over ${probes.probes} probes ` +
        `(${probes.unavailable503} answered 503 while the database was away)` +
        (probes.tooLong.length
          ? `; silent ${probes.tooLong.map((s) => `+${(s.fromMs / 1000).toFixed(0)}…+${(s.toMs / 1000).toFixed(0)} s`).join(", ")}`
          : ""),
    },
    {
      invariant: "the console answered only 200, or 503 while the database was away",
      held: unexpected.length === 0,
      detail: unexpected.length ? `also ${unexpected.join(", ")}` : "yes",
    },
    {
      invariant: "nobody restarted the console (npm start stayed the same process)",
      held: exited === null,
      detail:
        (exited === null
          ? `pid ${ctx.console.startPid} throughout`
          : `npm start exited (${exited})`) +
        `; its supervisor restarted ${[...tally].map(([n, c]) => `${n} ×${c}`).join(", ") || "nothing"}`,
    },
    {
      invariant: "no process of the console ended unless the chaos killed it (or its database)",
      held: unexplained.length === 0,
      detail: unexplained.length ? list(unexplained) : `${restarts.length} endings, each a fault's`,
    },
  ];
}

/**
 * The endings the chaos does not explain: a worker or the web server that ended other than by
 * the soak's kill -9 (or more often than it killed one), a database that ended more often than
 * the soak took it away. A database start that failed while the old one was still going away
 * is part of that fault's recovery.
 */
function unexplainedEndings(
  restarts: readonly SupervisorRestart[],
  faults: ReadonlyMap<Fault, FaultCount>,
): string[] {
  const injected = (...kinds: Fault[]) => kinds.reduce((n, k) => n + faults.get(k)!.injected, 0);
  const allowed = new Map([
    ["worker", injected("worker.kill9")],
    ["web server", injected("web.kill9")],
    ["database", injected("postgres.crash", "postgres.fastRestart", "postgres.pauseThenRestart")],
  ]);
  const problems: string[] = [];
  const kind = (service: string) => (service.startsWith("worker") ? "worker" : service);
  for (const { service, ending } of restarts) {
    const expected =
      kind(service) === "database"
        ? ending === POSTGRES_GONE || ending.startsWith("could not start")
        : ending === "killed by SIGKILL";
    if (!expected) {
      problems.push(`${service} ended by itself (${ending})`);
      continue;
    }
    if (ending.startsWith("could not start")) continue;
    const left = allowed.get(kind(service)) ?? 0;
    if (left === 0) problems.push(`${service} ended (${ending}) more often than the soak made it`);
    else allowed.set(kind(service), left - 1);
  }
  return problems;
}

/**
 * npm start's supervisor brought back whatever the chaos killed, and how fast: a new process
 * started within 2 min, and of use within 2 min (a worker: not counting the time the soak held
 * the database away, which a worker needs to say ready).
 */
export function recoveryVerdict(recoveries: readonly Recovery[]): Verdict {
  const lost = recoveries.filter((r) => r.restartSeconds === null || r.seconds === null);
  const kinds = [...new Set(recoveries.map((r) => r.process))].sort();
  const detail = kinds.map((kind) => {
    const back = recoveries.filter((r) => r.process === kind && r.seconds !== null);
    const slowest = back.reduce<Recovery | null>(
      (worst, r) => (worst === null || r.seconds! > worst.seconds! ? r : worst),
      null,
    );
    const longestStart = Math.max(0, ...back.map((r) => r.restartSeconds!));
    const away = slowest?.databaseAwaySeconds
      ? ` (${slowest.databaseAwaySeconds.toFixed(1)} s of it the database away)`
      : "";
    return (
      `${kind} ×${back.length}, longest ${(slowest?.seconds ?? 0).toFixed(1)} s${away}` +
      (kind === "database" ? "" : `, started again within ${longestStart.toFixed(1)} s`)
    );
  });
  const describeLost = (r: Recovery) =>
    r.restartSeconds === null
      ? `${r.process} (no new one started)`
      : `${r.process} (started again after ${r.restartSeconds.toFixed(1)} s, never up; ` +
        `${r.databaseAwaySeconds.toFixed(1)} s the database away)`;
  return {
    // Within 2 min: a worker's wait for the database the soak held away aside (docs/soak.md).
    invariant: "npm start's supervisor brought back every process the chaos killed (within 2 min)",
    held: lost.length === 0,
    detail:
      (lost.length ? `NOT back: ${lost.map(describeLost).join(", ")}; ` : "") +
      (detail.join("; ") || "nothing was killed"),
  };
}

/** What the database says about the runs, the visits and the secrets it holds. */
export async function databaseVerdicts(
  ctx: SoakContext,
  watch: WatchReport,
  durability: DurabilityReport,
  lastFaultOverAt: number,
): Promise<Verdict[]> {
  const client = new pg.Client({ connectionString: ctx.console.databaseUrl });
  client.on("error", () => {});
  await client.connect();
  try {
    const { rows: runs } = await client.query<{
      id: string;
      status: string;
      failure_reason: string | null;
    }>(`select id, status::text, failure_reason from runs`);
    const reasonless = runs.filter((r) => r.status === "failed" && !r.failure_reason);
    const stuckNow = await stuckRuns(client, lastFaultOverAt);
    for (const run of stuckNow) watch.stuck.set(run.id, `${run.what} at the end`);
    const by = (status: string) => runs.filter((r) => r.status === status).length;
    const aborted = runs.filter((r) => /abort/i.test(r.failure_reason ?? "")).length;

    const { rows: overlaps } = await client.query<{ run_id: string; step: string; visit: number }>(
      `select run_id, step, visit from (
         select run_id, step, visit, started_at,
                max(finished_at) over (partition by run_id order by started_at, id
                                       rows between unbounded preceding and 1 preceding) as before
         from step_visits) v
       where started_at < before`,
    );
    const { rows: visitCount } = await client.query<{ n: number }>(
      "select count(*)::int as n from step_visits",
    );

    return [
      {
        invariant: "every run ended (succeeded, failed with a reason, aborted) or is progressing",
        held: reasonless.length === 0 && stuckNow.length === 0,
        detail:
          `${runs.length} runs: ${by("succeeded")} succeeded, ${by("failed")} failed (${aborted} aborted), ` +
          `${by("running") - stuckNow.length} progressing` +
          (reasonless.length
            ? `; failed without a reason: ${list(reasonless.map((r) => r.id))}`
            : "") +
          (stuckNow.length ? `; stuck: ${list(stuckNow.map((r) => r.id))}` : ""),
      },
      {
        invariant: `no run stuck with a tick overdue > ${STUCK_AFTER_MS / 1000} s after the last fault`,
        held: watch.stuck.size === 0,
        detail: watch.stuck.size
          ? list([...watch.stuck].map(([id, what]) => `${id} ${what}`))
          : "none",
      },
      {
        invariant: "never two visits of one run at once (step_visits)",
        held: overlaps.length === 0,
        detail: overlaps.length
          ? list(overlaps.map((o) => `${o.run_id} ${o.step} visit ${o.visit}`))
          : `${visitCount[0]!.n} visits, none overlapping`,
      },
      {
        invariant:
          "every committed run event, visit, log line and context survived every database restart",
        held: durability.problems.length === 0,
        detail: durability.problems.length
          ? list(durability.problems)
          : `counted before and after ${durability.checked} restarts`,
      },
    ];
  } finally {
    await client.end().catch(() => {});
  }
}

/** What the lab nodes say: build drivers, templates and leftover processes. */
export async function labVerdicts(ctx: SoakContext, watch: WatchReport): Promise<Verdict[]> {
  const client = new pg.Client({ connectionString: ctx.console.databaseUrl });
  client.on("error", () => {});
  await client.connect();
  let hostsBuilding: Set<string>;
  try {
    // Hosts whose latest run is running: a build process there may be that run's own.
    const { rows } = await client.query<{ address: string; ssh_port: number }>(
      `select h.address, h.ssh_port from hosts h join lateral (
         select status from runs r where r.host_id = h.id order by r.created_at desc limit 1
       ) latest on true where latest.status = 'running'`,
    );
    hostsBuilding = new Set(rows.map((r) => String(r.ssh_port)));
  } finally {
    await client.end().catch(() => {});
  }
  const table = processTable();
  const leftovers = ctx.nodes.flatMap(({ node }, i) => {
    if (hostsBuilding.has(String(node.ssh.port))) return [];
    return leftoversOf(watch.buildGroups.get(i)!, table)
      .filter((p) => p.mountNamespace === node.mountNamespace)
      .map((p) => `${node.name} pid ${p.pid} (${p.cmdline.slice(0, 60)})`);
  });
  const builds = [...watch.buildGroups.values()].reduce((n, groups) => n + groups.size, 0);
  return [
    {
      invariant: "never two template drivers for one build on a host",
      held: watch.doubleDrivers.length === 0,
      detail: watch.doubleDrivers.length
        ? list(watch.doubleDrivers)
        : `${builds} builds seen in ${watch.samples} process-table samples`,
    },
    {
      invariant: "no template that existed was destroyed or changed",
      held: watch.templateChanges.length === 0,
      detail: watch.templateChanges.length
        ? list(watch.templateChanges)
        : describeTemplates(watch.templatesSeen),
    },
    {
      invariant: "no process of an aborted or failed build left on any node",
      held: leftovers.length === 0,
      detail: leftovers.length ? list(leftovers) : "none",
    },
  ];
}

/**
 * Every secret the soak knows, searched for in the console's log, in the database's run logs,
 * events, visits, run rows and audit log, in every page (signed in as the admin) and in the API
 * answers (every answer was searched on arrival; here the soak also reads every run and log).
 */
export async function secretVerdict(
  ctx: SoakContext,
  accounts: SoakAccounts,
  ids: { hostIds: string[]; powerTargetId?: string },
): Promise<Verdict> {
  const { secrets } = ctx;
  secrets.scan("the console's output (npm start)", fs.readFileSync(ctx.console.logFile, "utf8"));
  const client = new pg.Client({ connectionString: ctx.console.databaseUrl });
  client.on("error", () => {});
  await client.connect();
  let runIds: string[];
  let planId: string | undefined;
  let powerRunId: string | undefined;
  try {
    for (const table of [
      "run_log_chunks",
      "events",
      "step_visits",
      "runs",
      "audit_log",
      "console_process_restarts",
    ]) {
      const { rows } = await client.query<{ row: string }>(`select t::text as row from ${table} t`);
      secrets.scan(`table ${table}`, rows.map((r) => r.row).join("\n"));
    }
    runIds = (await client.query<{ id: string }>("select id from runs")).rows.map((r) => r.id);
    planId = (await client.query<{ id: string }>("select id from plans limit 1")).rows[0]?.id;
    // The power load's latest shutdown run: its page shows calls, requests and the log.
    powerRunId = (
      await client.query<{ id: string }>(
        "select id from runs where pipeline = 'power-shutdown' order by created_at desc limit 1",
      )
    ).rows[0]?.id;
  } finally {
    await client.end().catch(() => {});
  }

  for (const runId of runIds) {
    await ctx.api.get(`/api/runs/${runId}`);
    await ctx.api.get(`/api/runs/${runId}/log`);
  }
  for (const path of [
    "/api/hosts?limit=200",
    "/api/audit",
    "/api/console-key",
    "/api/catalog",
    "/api/crash-loops",
    "/api/tokens",
    "/api/power",
    "/api/power/ups",
    "/api/power/targets",
    "/api/power/plan",
    "/api/power/settings",
    "/api/power/shutdown-run",
    "/api/power/events",
  ]) {
    await ctx.adminApi.get(path);
  }
  for (const hostId of ids.hostIds) await ctx.api.get(`/api/hosts/${hostId}`);

  const cookie = await signInCookie(ctx.console.databaseUrl, accounts.admin);
  const pages = new Set<string>();
  for (const hostId of ids.hostIds) {
    const pageIds = {
      hostId,
      planId: planId ?? crypto.randomUUID(),
      runId: powerRunId ?? crypto.randomUUID(),
      // A power target's id for every `[targetId]` page (a page about another kind of target
      // answers "not found", and is searched all the same).
      targetId: ids.powerTargetId ?? crypto.randomUUID(),
    };
    for (const page of consolePages(pageIds)) pages.add(page);
  }
  let pagesRead = 0;
  for (const page of pages) {
    const response = await fetch(`${ctx.console.base}${page}`, {
      headers: { cookie },
      redirect: "manual",
      signal: AbortSignal.timeout(30_000),
    }).catch(() => null);
    if (!response) continue;
    pagesRead += 1;
    secrets.scan(`page ${page} (${response.status})`, await response.text());
  }
  const hits = secrets.hits();
  return {
    invariant: "no secret in any log, event, API answer or page",
    held: hits.length === 0,
    detail: hits.length
      ? list(hits.map((h) => `${h.secret} in ${h.where}`))
      : `${secrets.count} spellings of the soak's secrets; ${runIds.length} runs' logs, ${pagesRead} pages, every API answer`,
  };
}

async function signInCookie(url: string, account: { name: string; password: string }) {
  const { db, pool } = createDb(url, 1);
  try {
    const session = await signIn(db, {
      name: account.name,
      password: account.password,
      address: "127.0.0.1",
    });
    return `${SESSION_COOKIE}=${session.token}`;
  } finally {
    await pool.end();
  }
}

/** `66 templates on 4 nodes watched (VMIDs 9000–9016)` from `node:vmid` entries. */
function describeTemplates(seen: ReadonlySet<string>): string {
  const entries = [...seen].map((entry) => entry.split(":"));
  const nodes = new Set(entries.map(([node]) => node));
  const vmids = entries.map(([, vmid]) => Number(vmid));
  if (vmids.length === 0) return "no template seen";
  return (
    `${seen.size} templates on ${nodes.size} nodes watched ` +
    `(VMIDs ${Math.min(...vmids)}–${Math.max(...vmids)})`
  );
}
