import { asc, gt } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { consoleProcessRestarts } from "@/lib/db/schema";
import { CRASH_LOOP, crashLoopOf, type CrashLoopRule, type Restart } from "./crash-loop";

/** A process of the console in a crash loop, as the banner shows it (JSON-ready). */
export type CrashLoopReport = {
  process: string;
  restarts: number;
  windowMinutes: number;
  lastEnding: string;
  lastEndedAt: string;
  /** Milliseconds until the loop is over if no restart comes meanwhile (re-ask then). */
  calmsInMs: number;
};

/** The console's processes that are in a crash loop now, by the supervisor's recorded restarts. */
export async function currentCrashLoops(
  db: Database,
  now: Date = new Date(),
  rule: CrashLoopRule = CRASH_LOOP,
): Promise<CrashLoopReport[]> {
  const rows = await db
    .select({
      process: consoleProcessRestarts.process,
      endedAt: consoleProcessRestarts.endedAt,
      ending: consoleProcessRestarts.ending,
    })
    .from(consoleProcessRestarts)
    .where(gt(consoleProcessRestarts.endedAt, new Date(now.getTime() - rule.windowMs)))
    .orderBy(asc(consoleProcessRestarts.process), asc(consoleProcessRestarts.endedAt));
  const byProcess = new Map<string, Restart[]>();
  for (const row of rows) {
    byProcess.set(row.process, [...(byProcess.get(row.process) ?? []), row]);
  }
  const reports: CrashLoopReport[] = [];
  for (const [process, restarts] of byProcess) {
    const loop = crashLoopOf(restarts, now, rule);
    if (!loop) continue;
    reports.push({
      process,
      restarts: loop.restarts,
      windowMinutes: rule.windowMs / 60_000,
      lastEnding: loop.lastEnding,
      lastEndedAt: loop.lastEndedAt.toISOString(),
      calmsInMs: loop.calmsAt.getTime() - now.getTime(),
    });
  }
  return reports;
}
