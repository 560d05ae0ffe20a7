import os from "node:os";
import pg from "pg";
import { buildGroupsOn } from "./build-processes";
import { processTable } from "./proc";
import type { SoakContext } from "./soak-context";
import { apiTokenSecretsOn, templatesOn } from "./soak-lab";

/** How overdue a running run's tick may be, once the last fault is this long over (issue 18). */
export const STUCK_AFTER_MS = 60_000;

export type WatchReport = {
  /** Moments a node ran two template drivers at once. */
  doubleDrivers: string[];
  /** Templates seen on a node that later were gone or different. */
  templateChanges: string[];
  /** Every template seen: `node:vmid`. */
  templatesSeen: Set<string>;
  /** Per node (by index): every process group that was a build's. */
  buildGroups: Map<number, Set<number>>;
  /** Runs whose tick was overdue by more than STUCK_AFTER_MS with no fault for as long. */
  stuck: Map<string, string>;
  /** Process-table samples taken. */
  samples: number;
  /** The machine's 1-minute load average, every 5 s: a slow recovery on a busy machine says so. */
  loadAverages: number[];
};

/**
 * The cheap invariants, checked all along: the process table once a second (two drivers for
 * one build), every node's templates every few seconds (nothing that was a template may go or
 * change), the Proxmox token secrets the console creates (so they are searched for too), and
 * runs stuck with nothing to excuse it.
 */
export function startWatching(ctx: SoakContext, lastFaultOverAt: () => number) {
  const report: WatchReport = {
    doubleDrivers: [],
    templateChanges: [],
    templatesSeen: new Set(),
    buildGroups: new Map(ctx.nodes.map((_, i) => [i, new Set<number>()])),
    stuck: new Map(),
    samples: 0,
    loadAverages: [],
  };
  const templates = ctx.nodes.map(() => new Map<number, string>());
  const pool = new pg.Pool({ connectionString: ctx.console.databaseUrl, max: 1 });
  pool.on("error", () => {}); // the database goes away on purpose

  const sampleProcesses = () => {
    report.samples += 1;
    const table = processTable();
    ctx.nodes.forEach(({ node }, i) => {
      const groups = buildGroupsOn(node, table);
      for (const group of groups) {
        const seen = report.buildGroups.get(i)!;
        if (!seen.has(group.pgid))
          ctx.log(`watch: a template build started on ${node.name} (pgid ${group.pgid})`);
        seen.add(group.pgid);
      }
      if (groups.length > 1) {
        report.doubleDrivers.push(
          `${node.name} at ${ctx.since()}: driver groups ${groups.map((g) => g.pgid).join(", ")}`,
        );
      }
    });
  };

  const sampleTemplates = () => {
    ctx.nodes.forEach(({ node }, i) => {
      const now = templatesOn(node);
      for (const [vmid, config] of templates[i]!) {
        const current = now.get(vmid);
        if (current === config) continue;
        report.templateChanges.push(
          `${node.name} template ${vmid} ${current === undefined ? "destroyed" : "changed"} (seen by ${ctx.since()})`,
        );
        templates[i]!.delete(vmid); // said once
      }
      for (const [vmid, config] of now) {
        if (templates[i]!.has(vmid)) continue;
        templates[i]!.set(vmid, config);
        report.templatesSeen.add(`${node.name}:${vmid}`);
      }
      for (const [id, secret] of apiTokenSecretsOn(node)) {
        ctx.secrets.add(`Proxmox API token secret ${id} on ${node.name}`, secret);
      }
    });
  };

  const checkStuck = async () => {
    try {
      for (const run of await stuckRuns(pool, lastFaultOverAt())) {
        if (!report.stuck.has(run.id)) report.stuck.set(run.id, `${run.what} at ${ctx.since()}`);
      }
    } catch {
      // unreachable right now: the next check asks again
    }
  };

  // The first look is the "before" every later one is held to.
  sampleTemplates();
  const timers = [
    setInterval(sampleProcesses, 1000),
    setInterval(sampleTemplates, 3000),
    setInterval(() => {
      void checkStuck();
      report.loadAverages.push(os.loadavg()[0]!);
    }, 5000),
  ];
  return {
    report,
    async stop() {
      for (const timer of timers) clearInterval(timer);
      sampleProcesses();
      sampleTemplates();
      await checkStuck();
      await pool.end();
      return report;
    },
  };
}

/**
 * Running runs whose tick has been due for more than STUCK_AFTER_MS, counting from the later of
 * the tick's due time and the end of the last fault: a run the chaos just held up is not stuck.
 */
export async function stuckRuns(
  db: pg.Pool | pg.Client,
  lastFaultOverAt: number,
): Promise<Array<{ id: string; what: string }>> {
  const { rows } = await db.query<{ id: string; current_step: string; overdue: number | null }>(
    `select id, current_step, extract(epoch from now() - next_tick_at)::int as overdue
     from runs
     where status = 'running'
       and greatest(coalesce(next_tick_at, '-infinity'), $1::timestamptz)
           < now() - make_interval(secs => $2)`,
    [new Date(lastFaultOverAt), STUCK_AFTER_MS / 1000],
  );
  return rows.map((row) => ({
    id: row.id,
    what: `at ${row.current_step}, tick ${row.overdue === null ? "never scheduled" : `${row.overdue} s overdue`}`,
  }));
}
