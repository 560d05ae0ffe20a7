import { asc, eq, sql } from "drizzle-orm";
import type { z } from "zod";
import { audited, type AuditActor } from "@/lib/audit/record-audit";
import type { Database } from "@/lib/db/client";
import { notificationTargets } from "@/lib/db/schema";
import { AppError, isUniqueViolation } from "@/lib/errors";
import { seal } from "@/lib/secrets/seal";
import type { NotificationFormat } from "./formats";
import type { Severity } from "./message";
import {
  ZCreateNotificationTarget,
  ZNotificationTargetRef,
  ZUpdateNotificationTarget,
} from "./schemas";

type Row = typeof notificationTargets.$inferSelect;

/**
 * A target as pages and the API show it: never the URL's path (a webhook URL is a credential)
 * nor the auth header's value, only the URL's origin and whether a header is set.
 */
export type NotificationTargetView = {
  id: string;
  name: string;
  format: NotificationFormat;
  urlOrigin: string;
  template: string | null;
  templateEscape: "json" | "none";
  templateContentType: string | null;
  minSeverity: Severity;
  eventKinds: string[];
  authHeaderName: string | null;
  hasAuthHeader: boolean;
  enabled: boolean;
  createdAt: string;
  updatedAt: string;
};

export function targetView(row: Row): NotificationTargetView {
  return {
    id: row.id,
    name: row.name,
    format: row.format,
    urlOrigin: row.urlOrigin,
    template: row.template,
    templateEscape: row.templateEscape,
    templateContentType: row.templateContentType,
    minSeverity: row.minSeverity,
    eventKinds: row.eventKinds,
    authHeaderName: row.authHeaderName,
    hasAuthHeader: row.sealedAuthHeaderValue !== null,
    enabled: row.enabled,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

const nameTaken = (name: string) =>
  new AppError("conflict", `A notification target named ${name} already exists.`, {
    name: ["This name is taken; choose another."],
  });

const gone = () => new AppError("not_found", "That notification target does not exist (any more).");

export function urlOrigin(url: string): string {
  return new URL(url).origin;
}

export async function getTargetRow(db: Pick<Database, "select">, id: string): Promise<Row> {
  const [row] = await db.select().from(notificationTargets).where(eq(notificationTargets.id, id));
  if (!row) throw gone();
  return row;
}

export async function listTargets(db: Pick<Database, "select">): Promise<NotificationTargetView[]> {
  const rows = await db.select().from(notificationTargets).orderBy(asc(notificationTargets.name));
  return rows.map(targetView);
}

/** Adds a target; its URL and auth header value are sealed and never shown again. Admins only. */
export async function createTarget(
  db: Database,
  input: z.input<typeof ZCreateNotificationTarget>,
  actor: AuditActor,
): Promise<NotificationTargetView> {
  const data = ZCreateNotificationTarget.parse(input);
  return audited(
    db,
    {
      actor,
      action: "notify.target_create",
      target: (created) => `notify:${created.id}`,
      detail: { name: data.name, format: data.format },
    },
    async () => {
      const [row] = await db
        .insert(notificationTargets)
        .values({
          name: data.name,
          format: data.format,
          sealedUrl: seal(data.url),
          urlOrigin: urlOrigin(data.url),
          template: data.template ?? null,
          templateEscape: data.templateEscape,
          templateContentType: data.templateContentType ?? null,
          minSeverity: data.minSeverity,
          eventKinds: data.eventKinds,
          authHeaderName: data.authHeaderName ?? null,
          sealedAuthHeaderValue: data.authHeaderValue ? seal(data.authHeaderValue) : null,
          enabled: data.enabled,
        })
        .returning()
        .catch((error: unknown) => {
          throw isUniqueViolation(error) ? nameTaken(data.name) : error;
        });
      return targetView(row!);
    },
  );
}

/** Changes a target; a URL or header value left out keeps the stored one. Admins only. */
export async function updateTarget(
  db: Database,
  input: z.input<typeof ZUpdateNotificationTarget>,
  actor: AuditActor,
): Promise<NotificationTargetView> {
  const data = ZUpdateNotificationTarget.parse(input);
  return audited(db, { actor, action: "notify.target_update", target: `notify:${data.id}` }, () =>
    db.transaction(async (tx) => {
      const [current] = await tx
        .select()
        .from(notificationTargets)
        .where(eq(notificationTargets.id, data.id))
        .for("update");
      if (!current) throw gone();
      const format = data.format ?? current.format;
      const template = data.template ?? current.template;
      if (format === "template" && !template) {
        throw new AppError("invalid_input", "A custom template target needs its template.", {
          template: ["Enter the template of the body."],
        });
      }
      const removeAuth = data.removeAuthHeader;
      const authHeaderName = removeAuth ? null : (data.authHeaderName ?? current.authHeaderName);
      const sealedAuthHeaderValue = removeAuth
        ? null
        : data.authHeaderValue
          ? seal(data.authHeaderValue)
          : current.sealedAuthHeaderValue;
      if ((authHeaderName === null) !== (sealedAuthHeaderValue === null)) {
        throw new AppError("invalid_input", "An auth header needs both its name and its value.", {
          [authHeaderName === null ? "authHeaderName" : "authHeaderValue"]: [
            authHeaderName === null
              ? "Enter the header's name (e.g. Authorization)."
              : "Enter the header's value, or remove the header.",
          ],
        });
      }
      const [row] = await tx
        .update(notificationTargets)
        .set({
          name: data.name ?? current.name,
          format,
          ...(data.url ? { sealedUrl: seal(data.url), urlOrigin: urlOrigin(data.url) } : {}),
          template,
          templateEscape: data.templateEscape ?? current.templateEscape,
          templateContentType: data.templateContentType ?? current.templateContentType,
          minSeverity: data.minSeverity ?? current.minSeverity,
          eventKinds: data.eventKinds ?? current.eventKinds,
          authHeaderName,
          sealedAuthHeaderValue,
          enabled: data.enabled ?? current.enabled,
          updatedAt: new Date(),
        })
        .where(eq(notificationTargets.id, data.id))
        .returning()
        .catch((error: unknown) => {
          throw isUniqueViolation(error) ? nameTaken(data.name ?? current.name) : error;
        });
      return targetView(row!);
    }),
  );
}

/** Removes a target with its deliveries (their jobs find nothing and end). Admins only. */
export async function deleteTarget(
  db: Database,
  input: z.input<typeof ZNotificationTargetRef>,
  actor: AuditActor,
): Promise<void> {
  const { id } = ZNotificationTargetRef.parse(input);
  await audited(db, { actor, action: "notify.target_delete", target: `notify:${id}` }, async () => {
    const deleted = await db
      .delete(notificationTargets)
      .where(eq(notificationTargets.id, id))
      .returning({ id: notificationTargets.id });
    if (deleted.length === 0) throw gone();
  });
}

/** Counts used by tests and the dashboard: deliveries per state for one target. */
export async function deliveryCounts(
  db: Pick<Database, "execute">,
  targetId: string,
): Promise<Record<string, number>> {
  const result = await db.execute<{ state: string; n: number }>(sql`
    select state, count(*)::int as n from notification_deliveries
    where target_id = ${targetId}::uuid group by state`);
  return Object.fromEntries(result.rows.map((r) => [r.state, r.n]));
}
