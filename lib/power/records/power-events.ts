import type { Database } from "@/lib/db/client";
import { powerEvents } from "@/lib/db/schema";
import { enqueueNotifications } from "@/lib/notify/enqueue";
import { notifyLive } from "@/lib/live/notify";
import type { MonitorEventKind, PowerEventDraft } from "../triggers/decide";

/** Every kind of power event: the monitor's (triggers/decide.ts) and these. */
export type PowerEventKind =
  | MonitorEventKind
  | "shutdown.cancelled"
  | "shutdown.spared"
  | "shutdown.offline"
  | "monitor.failed"
  | "shutdown.would_send"
  | "shutdown.sent"
  | "shutdown.failed"
  | "shutdown.run_failed"
  | "shutdown.aborted"
  | "target.down"
  | "target.still_up"
  | "mode.armed"
  | "mode.disarmed"
  | "self-test.failed"
  | "config.changed"
  | "cluster.membership"
  | "cluster.fell_back"
  | "drill.started"
  | "console.crash_loop"
  | "console.crash_loop_over"
  | "consolidate.fell_back"
  | "consolidate.moved"
  | "consolidate.mains_back"
  | "power_back.started"
  | "power_back.host_failed"
  | "power_back.done"
  | "power_back.failed"
  | "ups_cycle.would_send"
  | "ups_cycle.refused"
  | "ups_cycle.sent"
  | "ups_cycle.failed"
  | "power.shed.started"
  | "power.shed.done"
  | "power.shed.failed"
  | "power.shed.restarted";

export type PowerEventInput = Omit<PowerEventDraft, "kind" | "at"> & {
  kind: PowerEventKind;
  at?: Date;
  upsId?: string | null;
  targetId?: string | null;
  runId?: string | null;
};

type Executor = Pick<Database, "insert" | "execute">;

/**
 * Appends power events and tells the live channel, in the caller's transaction: an event and
 * the change it reports commit together, and the UI hears of it on commit.
 */
export async function recordPowerEvents(
  tx: Executor,
  inputs: readonly PowerEventInput[],
): Promise<number[]> {
  if (inputs.length === 0) return [];
  const rows = await tx
    .insert(powerEvents)
    .values(
      inputs.map((e) => ({
        ...(e.at ? { at: e.at } : {}),
        severity: e.severity,
        kind: e.kind,
        upsId: e.upsId ?? null,
        targetId: e.targetId ?? null,
        runId: e.runId ?? null,
        message: e.message,
        data: e.data ?? null,
      })),
    )
    .returning({ id: powerEvents.id, upsId: powerEvents.upsId });
  for (const [i, row] of rows.entries()) {
    await notifyLive(tx, { type: "power", upsId: row.upsId, eventId: row.id });
    await enqueueNotifications(tx, {
      powerEventId: row.id,
      kind: inputs[i]!.kind,
      severity: inputs[i]!.severity,
    });
  }
  return rows.map((row) => row.id);
}
