import { and, desc, eq, gte, ilike, lte, sql, type SQL } from "drizzle-orm";
import { z } from "zod";
import { blankToUndefined, optionalInstant } from "@/lib/http/query-params";
import type { Database } from "@/lib/db/client";
import { auditLog, auditOutcome } from "@/lib/db/schema";
import { AUDIT_ACTIONS } from "./actions";

export const AUDIT_PAGE_SIZE = 50;
const MAX_PAGE_SIZE = 200;

const optionalText = (max: number, what: string) =>
  z.preprocess(
    blankToUndefined,
    z
      .string()
      .trim()
      .max(max, `At most ${max} characters of ${what}.`)
      // Postgres cannot hold a NUL in text, so no entry can contain one.
      .refine((text) => !text.includes("\0"), `Remove the NUL character from ${what}.`)
      .optional(),
  );

/** Where the previous page stopped: the last entry's exact time (microseconds) and id. */
const ZAuditCursor = z.object({
  at: z.string().regex(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/),
  id: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
});
type AuditCursor = z.infer<typeof ZAuditCursor>;

const CURSOR_MESSAGE = "This page link is damaged or outdated. Open the audit log from the start.";

function encodeCursor(cursor: AuditCursor): string {
  return Buffer.from(JSON.stringify(cursor), "utf8").toString("base64url");
}

function decodeCursor(text: string, ctx: z.RefinementCtx): AuditCursor | typeof z.NEVER {
  try {
    const parsed = ZAuditCursor.safeParse(JSON.parse(Buffer.from(text, "base64url").toString()));
    if (parsed.success) return parsed.data;
  } catch {
    // not base64url JSON: reported below like any other damaged cursor
  }
  ctx.addIssue({ code: "custom", message: CURSOR_MESSAGE });
  return z.NEVER;
}

/**
 * The audit log filter, shared by the page (its search params) and `GET /api/audit`. Every field
 * is optional; text filters match anywhere, case-insensitively.
 */
export const ZAuditFilter = z
  .object({
    action: z.preprocess(
      blankToUndefined,
      z.enum(AUDIT_ACTIONS, { error: "Choose an action from the list." }).optional(),
    ),
    actor: optionalText(200, "a user name"),
    target: optionalText(500, "a target"),
    outcome: z.preprocess(
      blankToUndefined,
      z.enum(auditOutcome.enumValues, { error: "Choose success, failure or denied." }).optional(),
    ),
    from: optionalInstant,
    to: optionalInstant,
    cursor: z.preprocess(
      blankToUndefined,
      z.string().max(200, CURSOR_MESSAGE).transform(decodeCursor).optional(),
    ),
    limit: z.preprocess(
      blankToUndefined,
      z.coerce
        .number({ error: "Enter a number of entries." })
        .int("Enter a whole number of entries.")
        .min(1, `Between 1 and ${MAX_PAGE_SIZE} entries.`)
        .max(MAX_PAGE_SIZE, `Between 1 and ${MAX_PAGE_SIZE} entries.`)
        .default(AUDIT_PAGE_SIZE),
    ),
  })
  .superRefine((value, ctx) => {
    if (value.from && value.to && value.from > value.to) {
      ctx.addIssue({ code: "custom", path: ["to"], message: "The end is before the start." });
    }
  });
export type TAuditFilter = z.infer<typeof ZAuditFilter>;

export type AuditEntryView = {
  id: number;
  at: string;
  actorName: string;
  actorUserId: string | null;
  action: string;
  target: string | null;
  /** The host the target is or belongs to (`host:<id>`, `run:<id>` of a host's run). */
  host: { id: string; name: string } | null;
  /**
   * What else the target names, by its name as it is now: a UPS, a power target, a notification
   * target, a plan or plan version, a cluster; null for anything else, or once it was deleted.
   */
  subject: { kind: AuditSubjectKind; name: string; href: string } | null;
  outcome: "success" | "failure" | "denied";
  detail: Record<string, unknown> | null;
};

const UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";

/**
 * The id of the host an entry's target names, directly or through its run (issue 19: rows read
 * `run:4381797b-…` and no host). Only well-formed ids are cast, so any target text is safe.
 */
const targetHostId = sql`(case
  when ${auditLog.target} ~ ${`^host:${UUID}$`} then substring(${auditLog.target} from 6)::uuid
  when ${auditLog.target} ~ ${`^run:${UUID}$`} then
    (select r.host_id from runs r where r.id = substring(${auditLog.target} from 5)::uuid)
  end)`;

export type AuditSubjectKind =
  "ups" | "power-target" | "notification-target" | "plan" | "plan-version" | "cluster";

/** `<prefix>:<uuid>` → the id, only when well-formed (any target text stays safe to cast). */
const idOf = (prefix: string) =>
  sql`(case when ${auditLog.target} ~ ${`^${prefix}:${UUID}$`} then substring(${auditLog.target} from ${sql.raw(String(prefix.length + 2))})::uuid end)`;

/** The kind and current name of what a target names besides hosts (see AuditEntryView). */
const subjectKind = sql<AuditSubjectKind | null>`(case
  when ${auditLog.target} like 'ups:%' then 'ups'
  when ${auditLog.target} like 'power_target:%' then 'power-target'
  when ${auditLog.target} like 'notify:%' then 'notification-target'
  when ${auditLog.target} like 'plan_version:%' then 'plan-version'
  when ${auditLog.target} like 'plan:%' then 'plan'
  when ${auditLog.target} like 'cluster:%' then 'cluster'
  end)`;
const subjectName = sql<string | null>`coalesce(
  (select u.name from ups_devices u where u.id = ${idOf("ups")}),
  (select coalesce(h.name, t.name) from power_targets t left join hosts h on h.id = t.host_id
     where t.id = ${idOf("power_target")}),
  (select n.name from notification_targets n where n.id = ${idOf("notify")}),
  (select p.name || ' v' || v.version from plan_versions v join plans p on p.id = v.plan_id
     where v.id = ${idOf("plan_version")}),
  (select p.name from plans p where p.id = ${idOf("plan")}),
  (select c.name from power_clusters c where c.id = ${idOf("cluster")})
)`;

const SUBJECT_HREF: Record<AuditSubjectKind, string> = {
  ups: "/power/ups",
  "power-target": "/power/targets",
  "notification-target": "/power/notifications",
  plan: "/catalog",
  "plan-version": "/catalog",
  cluster: "/power/clusters",
};

export type AuditPage = {
  entries: AuditEntryView[];
  /** Pass back as `cursor` for the next (older) page; null on the last page. */
  nextCursor: string | null;
};

/** `%`, `_` and `\` typed by the user are literal characters, not LIKE wildcards. */
function containing(text: string): string {
  return `%${text.replace(/[\\%_]/g, (char) => `\\${char}`)}%`;
}

/**
 * One page of the audit log, newest first, by keyset: each page continues strictly after the
 * previous page's last (at, id), so entries recorded while someone pages are neither skipped nor
 * shown twice, and deep pages cost the same as the first.
 */
export async function listAudit(db: Database, filter: TAuditFilter): Promise<AuditPage> {
  const conditions: SQL[] = [];
  if (filter.action) conditions.push(eq(auditLog.action, filter.action));
  if (filter.actor) conditions.push(ilike(auditLog.actorName, containing(filter.actor)));
  if (filter.target) conditions.push(ilike(auditLog.target, containing(filter.target)));
  if (filter.outcome) conditions.push(eq(auditLog.outcome, filter.outcome));
  if (filter.from) conditions.push(gte(auditLog.at, filter.from));
  if (filter.to) conditions.push(lte(auditLog.at, filter.to));
  if (filter.cursor) {
    conditions.push(
      sql`(${auditLog.at}, ${auditLog.id}) < (${filter.cursor.at}::timestamptz, ${filter.cursor.id})`,
    );
  }
  const rows = await db
    .select({
      id: auditLog.id,
      // Microseconds in UTC: a JS Date would round to milliseconds and break the keyset.
      at: sql<string>`to_char(${auditLog.at} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`,
      actorName: auditLog.actorName,
      actorUserId: auditLog.actorUserId,
      action: auditLog.action,
      target: auditLog.target,
      hostId: sql<string | null>`(select h.id from hosts h where h.id = ${targetHostId})`,
      hostName: sql<string | null>`(select h.name from hosts h where h.id = ${targetHostId})`,
      subjectKind,
      subjectName,
      outcome: auditLog.outcome,
      detail: auditLog.detail,
    })
    .from(auditLog)
    .where(and(...conditions))
    .orderBy(desc(auditLog.at), desc(auditLog.id))
    .limit(filter.limit + 1);
  const entries = rows
    .slice(0, filter.limit)
    .map(({ hostId, hostName, subjectKind: kind, subjectName: name, ...entry }) => ({
      ...entry,
      host: hostId !== null && hostName !== null ? { id: hostId, name: hostName } : null,
      subject: kind && name ? { kind, name, href: SUBJECT_HREF[kind] } : null,
    }));
  const last = entries.at(-1);
  return {
    entries,
    nextCursor:
      rows.length > filter.limit && last ? encodeCursor({ at: last.at, id: last.id }) : null,
  };
}

/** A filter from URL search params (`?action=…&actor=…`), for the page and the route alike. */
export function auditFilterInput(params: URLSearchParams): Record<string, string> {
  const input: Record<string, string> = {};
  for (const key of ["action", "actor", "target", "outcome", "from", "to", "cursor", "limit"]) {
    const value = params.get(key);
    if (value !== null) input[key] = value;
  }
  return input;
}
