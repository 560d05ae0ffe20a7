import type { Database } from "@/lib/db/client";
import { auditLog } from "@/lib/db/schema";
import { AppError } from "@/lib/errors";
import type { AuditAction } from "./actions";

export type AuditActor = { userId: string | null; name: string };
export type AuditEntry = {
  actor: AuditActor;
  action: AuditAction;
  /** What was acted on, e.g. `host:<uuid>`, `user:alice`; null when there is no single target. */
  target: string | null;
  outcome: "success" | "failure" | "denied";
  detail?: Record<string, unknown>;
};

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * Text as Postgres can store it. Targets and details quote what a user typed (a token label, a
 * user name), and a NUL or a lone UTF-16 surrogate in it would make the insert fail, so the
 * attempt would go unrecorded: NUL becomes ␀ (U+2400), a lone surrogate U+FFFD.
 */
function storable(text: string): string {
  return text.replaceAll("\0", "\u2400").replace(LONE_SURROGATE, "\uFFFD");
}

function storableDetail(detail: Record<string, unknown>): Record<string, unknown> {
  return JSON.parse(
    JSON.stringify(detail, (_key, value: unknown) =>
      typeof value === "string" ? storable(value) : value,
    ),
  ) as Record<string, unknown>;
}

/** The one write path into the audit log (it is append-only: nothing updates or deletes). */
export async function recordAudit(db: Database, entry: AuditEntry): Promise<void> {
  await db.insert(auditLog).values({
    actorUserId: entry.actor.userId,
    actorName: storable(entry.actor.name),
    action: entry.action,
    target: entry.target === null ? null : storable(entry.target),
    outcome: entry.outcome,
    detail: entry.detail ? storableDetail(entry.detail) : null,
  });
}

/**
 * Runs an audited action and records how it ended: success, or failure with the user-facing
 * reason (an AppError's message; never the text of an unexpected error, which may carry
 * parameters). The action's own error is rethrown unchanged. Target and detail may be drawn
 * from the result (what was created, how many were ended); a failure has no result to draw on.
 */
export async function audited<T>(
  db: Database,
  entry: Omit<AuditEntry, "outcome" | "target" | "detail"> & {
    target: string | null | ((result: T) => string | null);
    detail?: Record<string, unknown> | ((result: T) => Record<string, unknown>);
  },
  action: () => Promise<T>,
): Promise<T> {
  const { target, detail, ...common } = entry;
  try {
    const result = await action();
    await recordAudit(db, {
      ...common,
      target: typeof target === "function" ? target(result) : target,
      outcome: "success",
      detail: typeof detail === "function" ? detail(result) : detail,
    });
    return result;
  } catch (error) {
    const reason = error instanceof AppError ? error.message : "unexpected error";
    await recordAudit(db, {
      ...common,
      target: typeof target === "function" ? null : target,
      outcome: "failure",
      detail: { ...(typeof detail === "function" ? {} : detail), reason },
    }).catch(() => undefined);
    throw error;
  }
}
