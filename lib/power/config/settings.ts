import { z } from "zod";

/**
 * The power settings every decision reads: the mode, the trigger thresholds (global defaults,
 * overridable per UPS), how often the monitor polls, and the shutdown's deadlines. Stored as one
 * row (`power_settings`); a console that never saved any runs on these defaults, in dry-run.
 */

export const POWER_MODES = ["dry-run", "armed"] as const;
export type PowerMode = (typeof POWER_MODES)[number];

const seconds = (max: number) => z.number().int().min(1).max(max);

/** One field per trigger row of the spec; `null` turns a threshold off. */
const triggerFields = {
  /** Fire when the UPS itself says the battery is low (NUT LB/FSD, SNMP batteryLow/Depleted). */
  lowBattery: z.boolean(),
  /** Fire when the estimated runtime left falls below this. */
  runtimeBelowSeconds: seconds(86_400).nullable(),
  /** Fire when the charge falls below this percentage. */
  chargeBelowPercent: z.number().min(1).max(100).nullable(),
  /** Fire after this long on battery, by the console's own clock (never the UPS's counter). */
  onBatteryForSeconds: seconds(7 * 86_400).nullable(),
  /** A latch releases after this long of uninterrupted mains on its UPS. */
  latchReleaseAfterStableMainsSeconds: z
    .number()
    .int()
    .min(0)
    .max(7 * 86_400),
  /**
   * Opt-in: fire after this long without a reliable reading when the UPS was last seen on
   * battery. Off (null) by default: a UPS that stops answering raises an alarm, nothing more.
   */
  unreachableShutdownAfterSeconds: seconds(86_400).nullable(),
  /**
   * How long a row must go on firing, by the console's monotonic clock, before it latches (the
   * UPS's own low battery also latches after two readings in a row). A blip is not an outage.
   */
  confirmSeconds: z.number().int().min(0).max(600),
  /**
   * Opt-in: NUT's FSD fires even while the UPS says it is on line (NUT's own clients' reading).
   * Off by default: FSD counts only together with on battery, so an `upsmon -c fsd` during NUT
   * maintenance shuts nothing down.
   */
  forcedShutdownAlone: z.boolean(),
};

/**
 * The thresholds a consolidating cluster's first stage fires on (lib/power/clusters/schemas.ts):
 * the trigger rows that measure how much battery is left, with the same meaning and limits.
 */
export const ZThresholds = z.object({
  runtimeBelowSeconds: triggerFields.runtimeBelowSeconds,
  chargeBelowPercent: triggerFields.chargeBelowPercent,
  onBatteryForSeconds: triggerFields.onBatteryForSeconds,
});
export type Thresholds = z.infer<typeof ZThresholds>;

export const ZTriggerSettings = z.object({
  lowBattery: triggerFields.lowBattery.default(true),
  runtimeBelowSeconds: triggerFields.runtimeBelowSeconds.default(300),
  chargeBelowPercent: triggerFields.chargeBelowPercent.default(30),
  onBatteryForSeconds: triggerFields.onBatteryForSeconds.default(600),
  latchReleaseAfterStableMainsSeconds:
    triggerFields.latchReleaseAfterStableMainsSeconds.default(300),
  unreachableShutdownAfterSeconds: triggerFields.unreachableShutdownAfterSeconds.default(null),
  confirmSeconds: triggerFields.confirmSeconds.default(3),
  forcedShutdownAlone: triggerFields.forcedShutdownAlone.default(false),
});
export type TriggerSettings = z.infer<typeof ZTriggerSettings>;

/** A UPS's own deviations from the global triggers; a key left out follows the defaults. */
export const ZTriggerOverrides = z.object(triggerFields).partial().strict();
export type TriggerOverrides = z.infer<typeof ZTriggerOverrides>;

const shutdownFields = {
  /** Hard deadline of one shutdown call; a target that takes longer is reported as failed. */
  callTimeoutSeconds: z.number().int().min(1).max(120),
  /** How long a target may take to stop answering after its call (guests stop first). */
  targetDownSeconds: z.number().int().min(10).max(3600),
  /** A cluster's guests: each one's clean shutdown, then force-stop (docs/power-cluster-sequence.md). */
  guestTimeoutSeconds: z.number().int().min(5).max(1800),
  /** How many guests of a cluster shut down at once. */
  guestParallelism: z.number().int().min(1).max(64),
  /** The guest the console itself runs in, if it runs in one: never stopped by the sequence. */
  consoleGuest: z
    .object({
      node: z
        .string({ error: "The node the console's guest runs on, or leave both fields empty." })
        .regex(
          /^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?$/,
          "A Proxmox node name as the cluster spells it (letters, digits, inner hyphens; no domain).",
        ),
      vmid: z
        .number({ error: "The VMID of the console's guest, or leave both fields empty." })
        .int("A VMID is a whole number.")
        .min(100, "A VMID is 100 or more.")
        .max(999_999_999, "A VMID is at most 999999999."),
    })
    .nullable(),
};

export const ZShutdownSettings = z.object({
  callTimeoutSeconds: shutdownFields.callTimeoutSeconds.default(10),
  targetDownSeconds: shutdownFields.targetDownSeconds.default(180),
  guestTimeoutSeconds: shutdownFields.guestTimeoutSeconds.default(120),
  guestParallelism: shutdownFields.guestParallelism.default(8),
  consoleGuest: shutdownFields.consoleGuest.default(null),
});
export type ShutdownSettings = z.infer<typeof ZShutdownSettings>;

/** A change of some shutdown settings; a key left out keeps its value. */
export const ZShutdownSettingsChange = z.object(shutdownFields).partial().strict();

const powerBackFields = {
  /** Mains back without a break on every feed of the hosts that went down, this long. */
  mainsStableMinutes: z
    .number({ error: "Minutes of stable mains: a whole number." })
    .int("Minutes of stable mains: a whole number.")
    .min(1, "At least 1 minute: a blip is not mains back.")
    .max(1440, "At most 1440 minutes (a day)."),
  /** Every such feed charged to at least this much. */
  minChargePercent: z
    .number({ error: "A charge in percent: a number from 0 to 100." })
    .int("A charge in whole percent.")
    .min(0, "A charge is 0 % or more.")
    .max(100, "A charge is at most 100 %."),
};

/** When the fleet comes back by itself after an outage (lib/power/power-back/policy.ts). */
export const ZPowerBackSettings = z.object({
  mainsStableMinutes: powerBackFields.mainsStableMinutes.default(5),
  minChargePercent: powerBackFields.minChargePercent.default(50),
});
export type PowerBackSettings = z.infer<typeof ZPowerBackSettings>;

/** A change of the power-back settings; a key left out keeps its value. */
export const ZPowerBackSettingsChange = z.object(powerBackFields).partial().strict();

/**
 * Proxmox's tag format (pve-common `pve-tag`: `^(?i)[a-z0-9_][a-z0-9_\-\+\.]*$`); the tags of a
 * guest are its config's `tags:` split on `;`, `,` or spaces, compared without case (the
 * datacenter default, `tag-style case-sensitive=0`).
 */
export const PVE_TAG_RE = /^[a-z0-9_][a-z0-9_\-+.]*$/i;

const shedFields = {
  /**
   * Opt-in: shutting guests down before the main trigger is a choice an operator makes for
   * guests they named, never a default — off, nothing is shed.
   */
  enabled: z.boolean({ error: "Shedding is on (true) or off (false)." }),
  /** Minutes on battery (the monitor's monotonic clock) before the shed guests go down. */
  afterMinutes: z
    .number({ error: "Minutes on battery: a whole number." })
    .int("Minutes on battery: a whole number.")
    .min(1, "At least 1 minute on battery: a blip must never shed anything.")
    .max(1440, "At most 1440 minutes (a day)."),
  /** A guest carrying this Proxmox tag is shed. */
  tag: z
    .string({ error: "A Proxmox tag, e.g. shed." })
    .max(64, "A Proxmox tag is at most 64 characters here.")
    .regex(
      PVE_TAG_RE,
      "A Proxmox tag: letters, digits, _ - + . (not starting with - + .), e.g. shed.",
    ),
  /** Guests shed besides the tagged ones, by node and VMID. */
  guests: z
    .array(
      z
        .object({
          node: shutdownFields.consoleGuest.unwrap().shape.node,
          vmid: shutdownFields.consoleGuest.unwrap().shape.vmid,
        })
        .strict(),
      { error: "A list of guests as node/VMID, e.g. pve1/105, pve2/110." },
    )
    .max(1000, "At most 1000 guests in the list; tag them instead."),
};

/** Early load shedding (issue 30, item 7; lib/power/shed/). */
export const ZShedSettings = z.object({
  enabled: shedFields.enabled.default(false),
  afterMinutes: shedFields.afterMinutes.default(2),
  tag: shedFields.tag.default("shed"),
  guests: shedFields.guests.default([]),
});
export type ShedSettings = z.infer<typeof ZShedSettings>;

/** A change of the shed settings; a key left out keeps its value. */
export const ZShedSettingsChange = z.object(shedFields).partial().strict();

export const ZPowerSettings = z.object({
  mode: z.enum(POWER_MODES).default("dry-run"),
  triggers: ZTriggerSettings.default(ZTriggerSettings.parse({})),
  /** One small request per UPS per interval, on mains and on battery alike. */
  pollIntervalMs: z.number().int().min(200).max(60_000).default(1000),
  shutdown: ZShutdownSettings.default(ZShutdownSettings.parse({})),
  powerBack: ZPowerBackSettings.default(ZPowerBackSettings.parse({})),
  shed: ZShedSettings.default(ZShedSettings.parse({})),
});
export type PowerSettings = z.infer<typeof ZPowerSettings>;

export const DEFAULT_POWER_SETTINGS: PowerSettings = ZPowerSettings.parse({});

/** The thresholds that apply to one UPS: its overrides over the global defaults. */
export function effectiveTriggers(
  defaults: TriggerSettings,
  overrides: TriggerOverrides | null | undefined,
): TriggerSettings {
  return ZTriggerSettings.parse({ ...defaults, ...ZTriggerOverrides.parse(overrides ?? {}) });
}
