import { z } from "zod";

export const SEVERITIES = ["info", "warning", "critical"] as const;
export const ZSeverity = z.enum(SEVERITIES);
export type Severity = z.infer<typeof ZSeverity>;

/**
 * What every format renders: one event, power or onboarding, as words. `kind` is the
 * notification's kind (a power event's own, or one of ONBOARDING_KINDS), which targets filter on.
 */
export type NotificationMessage = {
  /** `power:12`, `run:34`, or `test` for the Test button's message. */
  id: string;
  source: "power" | "onboarding" | "test";
  kind: string;
  severity: Severity;
  /** One line: `On battery: ups-a`. */
  title: string;
  /** The event's own message. */
  text: string;
  /** ISO 8601. */
  at: string;
  /** The UPS, target or host the event is about, when there is one. */
  subject: string | null;
  data: Record<string, unknown>;
};

/** Words for the kinds a person reads in a title; an unknown kind is shown as it is. */
const KIND_TITLES: Record<string, string> = {
  "ups.on_battery": "On battery",
  "ups.mains_back": "Mains back",
  "ups.low_battery": "Low battery",
  "ups.unreachable": "UPS unreachable",
  "ups.reachable": "UPS reachable again",
  "trigger.fired": "Shutdown trigger fired",
  "trigger.cancelled": "Shutdown trigger cancelled",
  "latch.released": "Shutdown latch released",
  "consolidate.fired": "Consolidation's first threshold fired",
  "consolidate.released": "Consolidation's first-stage latch released",
  "consolidate.fell_back": "Consolidation not possible: cluster goes down as one unit",
  "cluster.fell_back": "Cluster cannot be prepared: its nodes are shut down one by one",
  "consolidate.moved": "Guests consolidated onto one node",
  "consolidate.mains_back": "Mains back after consolidation",
  "shutdown.cancelled": "Shutdown cancelled",
  "power_back.started": "Power back: bringing the fleet back",
  "power_back.host_failed": "Power back: a host was not powered on",
  "power_back.done": "Power back: done",
  "power_back.failed": "Power back failed",
  "ups_cycle.would_send": "UPS output cycle would be asked (dry run)",
  "ups_cycle.refused": "UPS output cycle not asked",
  "ups_cycle.sent": "UPS asked to cycle its output",
  "ups_cycle.failed": "UPS output cycle failed",
  "power.shed.started": "Early shedding: shutting the shed guests down",
  "power.shed.done": "Early shedding: done",
  "power.shed.failed": "Early shedding failed",
  "power.shed.restarted": "Early shedding: mains back, shed guests started again",
  "shutdown.spared": "Mains back: later stages spared",
  "shutdown.offline": "Shutdown without the database",
  "monitor.failed": "Power monitor cannot record",
  "shutdown.would_send": "Shutdown would be sent (dry run)",
  "shutdown.sent": "Shutdown sent",
  "shutdown.failed": "Shutdown failed",
  "shutdown.run_failed": "Shutdown run failed",
  "shutdown.aborted": "Shutdown run aborted",
  "target.down": "Target is down",
  "target.still_up": "Target still up",
  "mode.armed": "Power management armed",
  "mode.disarmed": "Power management disarmed",
  "config.changed": "Power configuration changed",
  "drill.started": "Drill started",
  "cluster.membership": "Cluster membership changed",
  "self-test.failed": "Self-test failed",
  "console.crash_loop": "Crash loop",
  "console.crash_loop_over": "Crash loop over",
  "host.active": "Host active",
  "onboarding.step_failed": "Onboarding step failed",
  "template.build_failed": "Template build failed",
  "template.missing": "Templates missing",
  "template.back": "Templates back",
  "key_rotation.host_left_behind": "Key rotation left a host behind",
  test: "Test message",
};

export function kindTitle(kind: string): string {
  return KIND_TITLES[kind] ?? kind;
}

export function messageTitle(kind: string, subject: string | null): string {
  return subject ? `${kindTitle(kind)}: ${subject}` : kindTitle(kind);
}

/** What a drill's messages begin with, so nobody mistakes a rehearsal for an outage. */
export const DRILL_MARK = "DRILL — ";

/** Severity in order, for "at least" comparisons. */
export function severityRank(severity: Severity): number {
  return SEVERITIES.indexOf(severity);
}

/** The message the Test button sends: a real delivery, marked as a test everywhere it shows. */
export function testMessage(targetName: string, now: Date): NotificationMessage {
  return {
    id: "test",
    source: "test",
    kind: "test",
    severity: "info",
    title: messageTitle("test", targetName),
    text: `Test message from CluPilot to ${targetName}: if you read this, the target works.`,
    at: now.toISOString(),
    subject: targetName,
    data: {},
  };
}

/** Every kind the console knows the words for, for the target form's checkboxes. */
export const KNOWN_KINDS: readonly string[] = Object.keys(KIND_TITLES).filter((k) => k !== "test");
