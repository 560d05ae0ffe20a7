import { and, desc, eq, inArray, sql, type AnyColumn, type SQL } from "drizzle-orm";
import type { z } from "zod";
import { audited, type AuditActor } from "@/lib/audit/record-audit";
import type { Database } from "@/lib/db/client";
import { auditLog, notificationDeliveries, notificationTargets } from "@/lib/db/schema";
import { AppError } from "@/lib/errors";
import { notifyLive } from "@/lib/live/notify";
import { ZAcknowledgeDeliveries } from "./schemas";
import { listTargets, type NotificationTargetView } from "./targets";

export type DeliveryView = {
  id: number;
  targetId: string;
  targetName: string;
  kind: string;
  severity: "info" | "warning" | "critical";
  state: "pending" | "delivered" | "failed" | "acknowledged";
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
  nextAttemptAt: string | null;
  createdAt: string;
  lastAttemptAt: string | null;
  deliveredAt: string | null;
  powerEventId: number | null;
  runEventId: number | null;
};

const deliveryColumns = {
  id: notificationDeliveries.id,
  targetId: notificationDeliveries.targetId,
  targetName: notificationTargets.name,
  kind: notificationDeliveries.kind,
  severity: notificationDeliveries.severity,
  state: notificationDeliveries.state,
  attempts: notificationDeliveries.attempts,
  lastStatus: notificationDeliveries.lastStatus,
  lastError: notificationDeliveries.lastError,
  nextAttemptAt: notificationDeliveries.nextAttemptAt,
  createdAt: notificationDeliveries.createdAt,
  lastAttemptAt: notificationDeliveries.lastAttemptAt,
  deliveredAt: notificationDeliveries.deliveredAt,
  powerEventId: notificationDeliveries.powerEventId,
  runEventId: notificationDeliveries.runEventId,
};

type DeliveryRow = {
  [K in keyof typeof deliveryColumns]: (typeof deliveryColumns)[K]["_"]["data"] | null;
};

function deliveryView(row: DeliveryRow): DeliveryView {
  const iso = (d: Date | null) => (d ? d.toISOString() : null);
  return {
    ...(row as Omit<DeliveryView, "nextAttemptAt" | "createdAt" | "lastAttemptAt" | "deliveredAt">),
    nextAttemptAt: iso(row.nextAttemptAt),
    createdAt: row.createdAt!.toISOString(),
    lastAttemptAt: iso(row.lastAttemptAt),
    deliveredAt: iso(row.deliveredAt),
  };
}

/** A target's card: the target, its latest delivery and its deliveries still failing. */
export type TargetCard = {
  target: NotificationTargetView;
  lastDelivery: DeliveryView | null;
  /** The last Test (audited: `notify.target_test`), which is a real message but no delivery. */
  lastTest: { at: string; by: string; ok: boolean; answer: string } | null;
  failing: DeliveryView[];
};

const FAILING_SHOWN = 20;

export async function targetCards(db: Pick<Database, "select">): Promise<TargetCard[]> {
  const targets = await listTargets(db);
  return Promise.all(
    targets.map(async (target) => {
      const [last] = await db
        .select(deliveryColumns)
        .from(notificationDeliveries)
        .innerJoin(notificationTargets, eq(notificationTargets.id, notificationDeliveries.targetId))
        .where(eq(notificationDeliveries.targetId, target.id))
        .orderBy(desc(notificationDeliveries.id))
        .limit(1);
      const failing = await db
        .select(deliveryColumns)
        .from(notificationDeliveries)
        .innerJoin(notificationTargets, eq(notificationTargets.id, notificationDeliveries.targetId))
        .where(
          and(
            eq(notificationDeliveries.targetId, target.id),
            eq(notificationDeliveries.state, "failed"),
          ),
        )
        .orderBy(desc(notificationDeliveries.id))
        .limit(FAILING_SHOWN);
      const [test] = await db
        .select({ at: auditLog.at, by: auditLog.actorName, detail: auditLog.detail })
        .from(auditLog)
        .where(
          and(
            eq(auditLog.action, "notify.target_test"),
            eq(auditLog.target, `notify:${target.id}`),
          ),
        )
        .orderBy(desc(auditLog.at))
        .limit(1);
      return {
        target,
        lastDelivery: last ? deliveryView(last) : null,
        lastTest: test ? testView(test) : null,
        failing: failing.map(deliveryView),
      };
    }),
  );
}

function testView(row: {
  at: Date;
  by: string;
  detail: Record<string, unknown> | null;
}): NonNullable<TargetCard["lastTest"]> {
  const status = row.detail?.status;
  const error = row.detail?.error;
  return {
    at: row.at.toISOString(),
    by: row.by,
    ok: typeof status === "number" && status < 400,
    answer:
      typeof status === "number"
        ? `HTTP ${status}`
        : typeof error === "string"
          ? error
          : "no answer recorded",
  };
}

/**
 * What the power dashboard says about notifications: deliveries failing now (to enabled targets;
 * a disabled target's are on its card), per target with the latest error. Empty when all is well.
 */
export type FailingTargetSummary = {
  targetId: string;
  targetName: string;
  failing: number;
  lastError: string | null;
  lastAttemptAt: string | null;
};

export async function failingDeliveriesSummary(
  db: Pick<Database, "execute">,
): Promise<FailingTargetSummary[]> {
  const result = await db.execute<{
    target_id: string;
    target_name: string;
    failing: number;
    last_error: string | null;
    last_attempt_at: string | null;
  }>(sql`
    select t.id as target_id, t.name as target_name, count(*)::int as failing,
      (array_agg(d.last_error order by d.id desc))[1] as last_error,
      max(d.last_attempt_at) as last_attempt_at
    from notification_deliveries d join notification_targets t on t.id = d.target_id
    where d.state = 'failed' and t.enabled
    group by t.id, t.name order by t.name`);
  return result.rows.map((r) => ({
    targetId: r.target_id,
    targetName: r.target_name,
    failing: r.failing,
    lastError: r.last_error,
    lastAttemptAt: r.last_attempt_at ? new Date(r.last_attempt_at).toISOString() : null,
  }));
}

/** Deliveries of some power events, for the event log (failed ones are marked there). */
export async function deliveriesOfPowerEvents(
  db: Pick<Database, "select">,
  powerEventIds: readonly number[],
): Promise<DeliveryView[]> {
  if (powerEventIds.length === 0) return [];
  const rows = await db
    .select(deliveryColumns)
    .from(notificationDeliveries)
    .innerJoin(notificationTargets, eq(notificationTargets.id, notificationDeliveries.targetId))
    .where(inArray(notificationDeliveries.powerEventId, [...powerEventIds]))
    .orderBy(notificationDeliveries.id);
  return rows.map(deliveryView);
}

/**
 * Marks a target's failing deliveries as seen (operators): they leave the dashboard, and their
 * retries stop — an operator who acknowledged knows the message did not arrive.
 */
export async function acknowledgeFailedDeliveries(
  db: Database,
  input: z.input<typeof ZAcknowledgeDeliveries>,
  actor: AuditActor,
): Promise<{ acknowledged: number }> {
  const { targetId } = ZAcknowledgeDeliveries.parse(input);
  return audited(
    db,
    {
      actor,
      action: "notify.acknowledge",
      target: `notify:${targetId}`,
      detail: (r) => ({ acknowledged: r.acknowledged }),
    },
    () =>
      db.transaction(async (tx) => {
        const [target] = await tx
          .select({ id: notificationTargets.id })
          .from(notificationTargets)
          .where(eq(notificationTargets.id, targetId));
        if (!target)
          throw new AppError("not_found", "That notification target does not exist (any more).");
        const rows = await tx
          .update(notificationDeliveries)
          .set({
            state: "acknowledged",
            acknowledgedAt: new Date(),
            acknowledgedBy: actor.name,
            nextAttemptAt: null,
          })
          .where(
            and(
              eq(notificationDeliveries.targetId, targetId),
              eq(notificationDeliveries.state, "failed"),
            ),
          )
          .returning({ id: notificationDeliveries.id });
        await notifyLive(tx, { type: "power", upsId: null, eventId: null });
        return { acknowledged: rows.length };
      }),
  );
}

/**
 * The targets a power event's notification is failing to reach now, by name (null: none), as a
 * column for the event log's query.
 */
export function failedNotificationTargetsOf(powerEventId: SQL | AnyColumn) {
  return sql<string[] | null>`(
    select array_agg(t.name order by t.name)
    from notification_deliveries d join notification_targets t on t.id = d.target_id
    where d.power_event_id = ${powerEventId} and d.state = 'failed')`;
}
