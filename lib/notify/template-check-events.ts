import { and, desc, eq, inArray } from "drizzle-orm";
import type { Transaction } from "@/lib/db/client";
import { events, hosts } from "@/lib/db/schema";
import { enqueueNotifications } from "./enqueue";

type Tx = Transaction;

/** The periodic template check's two event kinds: a finding, and its end. */
export const TEMPLATE_CHECK_KINDS = {
  missing: "template.missing",
  back: "template.back",
} as const;

/** Who the host's event log names for these events. */
export const TEMPLATE_CHECK_ACTOR = "template-check";

/** What one check of one host found; "could not check" is not a finding and records nothing. */
export type TemplateFinding =
  | { kind: "ok" }
  | { kind: "missing"; vmids: readonly number[]; text: string }
  | { kind: "unknown" };

/**
 * Records a host's template finding as an event (and so a notification), once per finding: a
 * `template.missing` when the set of missing VMIDs differs from the one last announced, a
 * `template.back` when every template is there again after one was announced missing. A check
 * that finds the same thing every 15 minutes, or could not ask, records nothing. Runs in the
 * caller's transaction, with the host row locked so two checks of one host cannot both announce.
 * Returns the recorded event's kind, or null.
 */
export async function recordTemplateFinding(
  tx: Tx,
  hostId: string,
  finding: TemplateFinding,
): Promise<string | null> {
  if (finding.kind === "unknown") return null;
  await tx.select({ id: hosts.id }).from(hosts).where(eq(hosts.id, hostId)).for("update");
  const [last] = await tx
    .select({ kind: events.kind, data: events.data })
    .from(events)
    .where(
      and(
        eq(events.hostId, hostId),
        inArray(events.kind, [TEMPLATE_CHECK_KINDS.missing, TEMPLATE_CHECK_KINDS.back]),
      ),
    )
    .orderBy(desc(events.id))
    .limit(1);
  const lastMissing = last?.kind === TEMPLATE_CHECK_KINDS.missing ? vmidsOf(last.data) : null;

  if (finding.kind === "missing") {
    const vmids = [...finding.vmids].sort((a, b) => a - b);
    if (lastMissing !== null && lastMissing.join(",") === vmids.join(",")) return null;
    await record(tx, hostId, {
      kind: TEMPLATE_CHECK_KINDS.missing,
      severity: "warning",
      message: `the periodic template check found templates missing: ${finding.text}. Start the onboarding again so BuildVmTemplate builds what is missing`,
      data: { vmids },
    });
    return TEMPLATE_CHECK_KINDS.missing;
  }
  if (lastMissing === null) return null;
  await record(tx, hostId, {
    kind: TEMPLATE_CHECK_KINDS.back,
    severity: "info",
    message: `every template the catalog requires is a usable template again (missing before: ${lastMissing.join(", ")})`,
    data: { vmids: lastMissing },
  });
  return TEMPLATE_CHECK_KINDS.back;
}

function vmidsOf(data: Record<string, unknown> | null): number[] {
  const vmids = data?.vmids;
  return Array.isArray(vmids) ? vmids.filter((v): v is number => typeof v === "number") : [];
}

async function record(
  tx: Tx,
  hostId: string,
  event: {
    kind: string;
    severity: "info" | "warning";
    message: string;
    data: Record<string, unknown>;
  },
): Promise<void> {
  const [row] = await tx
    .insert(events)
    .values({
      hostId,
      kind: event.kind,
      actor: TEMPLATE_CHECK_ACTOR,
      message: event.message,
      data: event.data,
    })
    .returning({ id: events.id });
  await enqueueNotifications(tx, {
    runEventId: row!.id,
    kind: event.kind,
    severity: event.severity,
  });
}
