import {
  and,
  count,
  desc,
  eq,
  gte,
  inArray,
  isNull,
  like,
  lt,
  lte,
  or,
  type SQL,
} from "drizzle-orm";
import { z } from "zod";
import { blankToUndefined, optionalInstant } from "@/lib/http/query-params";
import type { Database } from "@/lib/db/client";
import { hosts, powerEvents, powerEventSeverity, powerTargets, upsDevices } from "@/lib/db/schema";
import { failedNotificationTargetsOf } from "@/lib/notify/deliveries";

export const POWER_EVENT_PAGE_SIZE = 50;
const MAX_PAGE_SIZE = 200;

export const POWER_EVENT_SEVERITIES = powerEventSeverity.enumValues;
export type PowerEventSeverity = (typeof POWER_EVENT_SEVERITIES)[number];

/** A severity filter means "this bad or worse": at 3 a.m. nobody wants warnings without criticals. */
export function severitiesAtLeast(minimum: PowerEventSeverity): PowerEventSeverity[] {
  return POWER_EVENT_SEVERITIES.slice(POWER_EVENT_SEVERITIES.indexOf(minimum));
}

const CURSOR_MESSAGE = "This page link is damaged or outdated. Open the event log from the start.";

/**
 * The event log's filters, shared by the power page (its search params) and
 * `GET /api/power/events`. Every field is optional.
 */
export const ZPowerEventFilter = z
  .object({
    severity: z.preprocess(
      blankToUndefined,
      z.enum(POWER_EVENT_SEVERITIES, { error: "Choose info, warning or critical." }).optional(),
    ),
    /** An exact kind (`ups.on_battery`) or its group (`ups`, `shutdown`, `mode`). */
    kind: z.preprocess(
      blankToUndefined,
      z
        .string()
        .trim()
        .regex(/^[a-z_]+(\.[a-z_]+)*$/, "A kind like ups.on_battery, or a group like shutdown.")
        .max(64, "A kind like ups.on_battery, or a group like shutdown.")
        .optional(),
    ),
    upsId: z.preprocess(
      blankToUndefined,
      z.uuid({ error: "Not a UPS id: choose the UPS from the list." }).optional(),
    ),
    /** Only events an operator still has to acknowledge. */
    unacknowledged: z.preprocess(
      (value) => (value === "" || value === undefined ? undefined : value),
      z
        .enum(["true", "false", "1", "0", "on"], { error: "Use true or false." })
        .transform((value) => value === "true" || value === "1" || value === "on")
        .optional(),
    ),
    from: optionalInstant,
    to: optionalInstant,
    /** The last id of the previous page (events are listed newest first). */
    cursor: z.preprocess(
      blankToUndefined,
      z.coerce
        .number({ error: CURSOR_MESSAGE })
        .int(CURSOR_MESSAGE)
        .positive(CURSOR_MESSAGE)
        .max(Number.MAX_SAFE_INTEGER, CURSOR_MESSAGE)
        .optional(),
    ),
    limit: z.preprocess(
      blankToUndefined,
      z.coerce
        .number({ error: "Enter a number of events." })
        .int("Enter a whole number of events.")
        .min(1, `Between 1 and ${MAX_PAGE_SIZE} events.`)
        .max(MAX_PAGE_SIZE, `Between 1 and ${MAX_PAGE_SIZE} events.`)
        .default(POWER_EVENT_PAGE_SIZE),
    ),
  })
  .superRefine((value, ctx) => {
    // Runs even when a field failed (zod keeps going to report every field): only real dates.
    if (value.from instanceof Date && value.to instanceof Date && value.from > value.to) {
      ctx.addIssue({ code: "custom", path: ["to"], message: "The end is before the start." });
    }
  });
export type TPowerEventFilter = z.infer<typeof ZPowerEventFilter>;
export const POWER_EVENT_FILTER_KEYS = [
  "severity",
  "kind",
  "upsId",
  "unacknowledged",
  "from",
  "to",
  "cursor",
  "limit",
] as const;

export type PowerEventView = {
  id: number;
  at: string;
  severity: PowerEventSeverity;
  kind: string;
  message: string;
  ups: { id: string; name: string } | null;
  target: { id: string; name: string } | null;
  runId: string | null;
  data: Record<string, unknown> | null;
  acknowledged: { at: string; by: string } | null;
  /** Notification targets this event has not reached (yet): failing deliveries. */
  notificationFailedTo: string[];
};

export type PowerEventPage = {
  events: PowerEventView[];
  /** Pass back as `cursor` for the next (older) page; null on the last page. */
  nextCursor: string | null;
};

/**
 * One page of the power event log, newest first. Keyset paging on the id, the order events were
 * recorded in: events recorded while someone pages are neither skipped nor shown twice.
 */
export async function listPowerEvents(
  db: Database,
  filter: TPowerEventFilter,
): Promise<PowerEventPage> {
  const conditions: SQL[] = [];
  if (filter.severity) {
    conditions.push(inArray(powerEvents.severity, severitiesAtLeast(filter.severity)));
  }
  if (filter.kind) {
    conditions.push(
      or(
        eq(powerEvents.kind, filter.kind),
        like(powerEvents.kind, `${filter.kind.replaceAll("_", "\\_")}.%`),
      )!,
    );
  }
  if (filter.upsId) conditions.push(eq(powerEvents.upsId, filter.upsId));
  if (filter.unacknowledged === true) {
    conditions.push(isNull(powerEvents.acknowledgedAt));
    conditions.push(inArray(powerEvents.severity, severitiesAtLeast("warning")));
  }
  if (filter.from) conditions.push(gte(powerEvents.at, filter.from));
  if (filter.to) conditions.push(lte(powerEvents.at, filter.to));
  if (filter.cursor) conditions.push(lt(powerEvents.id, filter.cursor));

  const rows = await db
    .select({
      event: powerEvents,
      upsName: upsDevices.name,
      pbsName: powerTargets.name,
      hostName: hosts.name,
      notificationFailedTo: failedNotificationTargetsOf(powerEvents.id),
    })
    .from(powerEvents)
    .leftJoin(upsDevices, eq(upsDevices.id, powerEvents.upsId))
    .leftJoin(powerTargets, eq(powerTargets.id, powerEvents.targetId))
    .leftJoin(hosts, eq(hosts.id, powerTargets.hostId))
    .where(and(...conditions))
    .orderBy(desc(powerEvents.id))
    .limit(filter.limit + 1);
  const page = rows.slice(0, filter.limit);
  const last = page.at(-1);
  return {
    events: page.map(({ event, upsName, pbsName, hostName, notificationFailedTo }) => ({
      id: event.id,
      at: event.at.toISOString(),
      severity: event.severity,
      kind: event.kind,
      message: event.message,
      ups: event.upsId && upsName ? { id: event.upsId, name: upsName } : null,
      target:
        event.targetId && (hostName ?? pbsName)
          ? { id: event.targetId, name: (hostName ?? pbsName)! }
          : null,
      runId: event.runId,
      data: event.data,
      acknowledged:
        event.acknowledgedAt && event.acknowledgedBy
          ? { at: event.acknowledgedAt.toISOString(), by: event.acknowledgedBy }
          : null,
      notificationFailedTo: notificationFailedTo ?? [],
    })),
    nextCursor: rows.length > filter.limit && last ? String(last.event.id) : null,
  };
}

/** Warnings and criticals nobody acknowledged yet: the count the page's heading shows. */
export async function countUnacknowledgedPowerEvents(db: Database): Promise<number> {
  const [row] = await db
    .select({ n: count() })
    .from(powerEvents)
    .where(
      and(
        isNull(powerEvents.acknowledgedAt),
        inArray(powerEvents.severity, severitiesAtLeast("warning")),
      ),
    );
  return row?.n ?? 0;
}
