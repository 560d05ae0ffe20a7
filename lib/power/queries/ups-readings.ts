import { and, asc, count, eq, gte, lte, sql } from "drizzle-orm";
import { z } from "zod";
import { optionalInstant } from "@/lib/http/query-params";
import type { Database } from "@/lib/db/client";
import { upsReadings } from "@/lib/db/schema";

/** The chart's default window: an operator opening the page sees the last hours. */
export const DEFAULT_READINGS_WINDOW_MS = 6 * 3_600_000;
const MAX_WINDOW_MS = 7 * 86_400_000;
/**
 * More points than a chart's width can show are merged into time buckets (a 1 Hz outage of
 * hours would otherwise send tens of thousands of rows to every open page).
 */
export const MAX_POINTS = 3_000;

export const ZUpsReadingsQuery = z
  .object({
    upsId: z.uuid({ error: "Not a UPS id: choose the UPS from the power page." }),
    from: optionalInstant,
    to: optionalInstant,
  })
  .superRefine((value, ctx) => {
    // Runs even when a field failed (zod keeps going to report every field): only real dates.
    const from = value.from instanceof Date ? value.from : null;
    const to = value.to instanceof Date ? value.to : null;
    if (from && to && from > to) {
      ctx.addIssue({ code: "custom", path: ["to"], message: "The end is before the start." });
    } else if (from && (to?.getTime() ?? Date.now()) - from.getTime() > MAX_WINDOW_MS) {
      ctx.addIssue({
        code: "custom",
        path: ["from"],
        message: "Ask for at most 7 days at once (older readings are pruned anyway).",
      });
    }
  });
export type TUpsReadingsQuery = z.infer<typeof ZUpsReadingsQuery>;

export type ReadingPoint = {
  at: string;
  reachable: boolean;
  onBattery: boolean | null;
  lowBattery: boolean | null;
  chargePercent: number | null;
  runtimeSeconds: number | null;
};

export type ReadingSeries = {
  upsId: string;
  from: string;
  to: string;
  /** Null: every stored reading; else each point merges this many seconds (the worst of them). */
  bucketSeconds: number | null;
  points: ReadingPoint[];
};

/**
 * One UPS's readings in a time window, oldest first. Merged buckets keep the worst of what they
 * merge (lowest charge and runtime, on battery if any reading was, unreachable if any was), so
 * thinning never hides the dip an operator is looking for.
 */
export async function listUpsReadings(
  db: Database,
  query: TUpsReadingsQuery,
  now: Date = new Date(),
): Promise<ReadingSeries> {
  const to = query.to ?? now;
  const from = query.from ?? new Date(to.getTime() - DEFAULT_READINGS_WINDOW_MS);
  const inWindow = and(
    eq(upsReadings.upsId, query.upsId),
    gte(upsReadings.at, from),
    lte(upsReadings.at, to),
  );
  const [{ n } = { n: 0 }] = await db.select({ n: count() }).from(upsReadings).where(inWindow);
  const series = { upsId: query.upsId, from: from.toISOString(), to: to.toISOString() };

  if (n <= MAX_POINTS) {
    const rows = await db
      .select({
        at: upsReadings.at,
        reachable: upsReadings.reachable,
        onBattery: upsReadings.onBattery,
        lowBattery: upsReadings.lowBattery,
        chargePercent: upsReadings.chargePercent,
        runtimeSeconds: upsReadings.runtimeSeconds,
      })
      .from(upsReadings)
      .where(inWindow)
      .orderBy(asc(upsReadings.at), asc(upsReadings.id));
    return {
      ...series,
      bucketSeconds: null,
      points: rows.map((row) => ({ ...row, at: row.at.toISOString() })),
    };
  }

  const bucketSeconds = Math.ceil((to.getTime() - from.getTime()) / 1000 / MAX_POINTS);
  const { rows } = await db.execute<{
    at: string;
    reachable: boolean;
    on_battery: boolean | null;
    low_battery: boolean | null;
    charge_percent: number | null;
    runtime_seconds: number | null;
  }>(sql`
    select max(at) as at, bool_and(reachable) as reachable, bool_or(on_battery) as on_battery,
      bool_or(low_battery) as low_battery, min(charge_percent) as charge_percent,
      min(runtime_seconds) as runtime_seconds
    from (
      select date_bin(make_interval(secs => ${bucketSeconds}), r.at, ${from.toISOString()}::timestamptz) as bucket, r.*
      from ${upsReadings} r
      where r.ups_id = ${query.upsId} and r.at >= ${from.toISOString()}::timestamptz
        and r.at <= ${to.toISOString()}::timestamptz
    ) bucketed
    group by bucket order by bucket`);
  return {
    ...series,
    bucketSeconds,
    points: rows.map((row) => ({
      at: new Date(row.at).toISOString(),
      reachable: row.reachable,
      onBattery: row.on_battery,
      lowBattery: row.low_battery,
      chargePercent: row.charge_percent,
      runtimeSeconds: row.runtime_seconds,
    })),
  };
}
