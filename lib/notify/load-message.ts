import { eq } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { events, hosts, powerEvents, powerTargets, runs, upsDevices } from "@/lib/db/schema";
import { DRILL_MARK, messageTitle, type NotificationMessage, type Severity } from "./message";

export type DeliveryEventRef = {
  kind: string;
  severity: Severity;
  powerEventId: number | null;
  runEventId: number | null;
};

/**
 * The message a delivery sends, read from its event as committed: a power event with the UPS or
 * target it is about, or a run event with its host. Null when the event is gone (the delivery
 * row goes with it, so only a race with a deletion sees this).
 */
export async function loadMessage(
  db: Pick<Database, "select">,
  ref: DeliveryEventRef,
): Promise<NotificationMessage | null> {
  if (ref.powerEventId !== null) {
    const [row] = await db
      .select({
        id: powerEvents.id,
        at: powerEvents.at,
        message: powerEvents.message,
        data: powerEvents.data,
        upsName: upsDevices.name,
        targetName: powerTargets.name,
        targetHost: hosts.name,
        runContext: runs.context,
      })
      .from(powerEvents)
      .leftJoin(upsDevices, eq(upsDevices.id, powerEvents.upsId))
      .leftJoin(powerTargets, eq(powerTargets.id, powerEvents.targetId))
      .leftJoin(hosts, eq(hosts.id, powerTargets.hostId))
      .leftJoin(runs, eq(runs.id, powerEvents.runId))
      .where(eq(powerEvents.id, ref.powerEventId));
    if (!row) return null;
    // A console event (a crash loop) is about one of the console's own processes.
    const process = typeof row.data?.process === "string" ? row.data.process : null;
    const subject = row.targetHost ?? row.targetName ?? row.upsName ?? process;
    // An event of a drill's run (or the drill's start) says so first, in every format.
    const drill = ref.kind === "drill.started" || isDrillRun(row.runContext);
    const mark = drill ? DRILL_MARK : "";
    return {
      id: `power:${row.id}`,
      source: "power",
      kind: ref.kind,
      severity: ref.severity,
      title: `${mark}${messageTitle(ref.kind, subject)}`,
      text: `${mark}${row.message}`,
      at: row.at.toISOString(),
      subject,
      data: { ...row.data, ups: row.upsName, ...(drill ? { drill: true } : {}) },
    };
  }
  if (ref.runEventId === null) return null;
  const [row] = await db
    .select({
      id: events.id,
      at: events.at,
      message: events.message,
      runId: events.runId,
      pipeline: runs.pipeline,
      step: runs.failedStep,
      hostName: hosts.name,
    })
    .from(events)
    .leftJoin(runs, eq(runs.id, events.runId))
    .leftJoin(hosts, eq(hosts.id, events.hostId))
    .where(eq(events.id, ref.runEventId));
  if (!row) return null;
  const subject = row.hostName ?? null;
  const text =
    ref.kind === "host.active" && subject
      ? `${subject} finished onboarding and is an active Proxmox host.`
      : row.message;
  return {
    id: `run:${row.id}`,
    source: "onboarding",
    kind: ref.kind,
    severity: ref.severity,
    title: messageTitle(ref.kind, subject),
    text,
    at: row.at.toISOString(),
    subject,
    data: { runId: row.runId, pipeline: row.pipeline, failedStep: row.step },
  };
}

/**
 * Whether a power run is a drill: its input carries the drill mark (lib/power/shutdown/drill-mark.ts
 * reads the same field; notify sits below power, so the one-line test is repeated here).
 */
function isDrillRun(context: Record<string, unknown> | null): boolean {
  const input = context?.input;
  return typeof input === "object" && input !== null && "drill" in input;
}
