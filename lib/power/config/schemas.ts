import { z } from "zod";
import { ZNutSourceSchema, ZSnmpSourceSchema } from "@/lib/power/ups/reading";
import {
  POWER_MODES,
  ZPowerBackSettingsChange,
  ZShedSettingsChange,
  ZShutdownSettingsChange,
  ZTriggerOverrides,
} from "./settings";

/**
 * Every input of the power domain functions, in one place: the JSON API and the server actions
 * parse with these (the domain functions parse again, so no caller can skip it).
 */

const id = (what: string) => z.uuid({ error: `Not a ${what} id; reload the page.` });

const upsName = z
  .string()
  .trim()
  .min(1, "Enter a name for the UPS.")
  .max(64, "At most 64 characters.")
  .regex(/^[A-Za-z0-9][A-Za-z0-9 ._-]*$/, "Letters, digits, spaces, '.', '_' and '-'.");

export const ZUpsSourceInput = z.discriminatedUnion("type", [ZNutSourceSchema, ZSnmpSourceSchema]);

/**
 * The UPS output cycle after a shutdown (off by default): yes or no, nothing else — a form's
 * `on`/`true`/`false` become booleans before this (lib/actions/power/power-form-input.ts).
 */
export const ZOutputCycle = z.boolean({
  error: "Choose whether the console cycles this UPS's output after a shutdown: on or off.",
});

export const ZCreateUpsDevice = z.object({
  name: upsName,
  source: ZUpsSourceInput,
  triggerOverrides: ZTriggerOverrides.default({}),
  outputCycle: ZOutputCycle.default(false),
});
export type TCreateUpsDevice = z.infer<typeof ZCreateUpsDevice>;

const [snmpV1V2c, snmpV3] = ZSnmpSourceSchema.options;

/** A changed source: secrets left out keep the stored ones (the form never shows them). */
export const ZUpsSourceChange = z.discriminatedUnion("type", [
  ZNutSourceSchema,
  z.discriminatedUnion("version", [
    snmpV1V2c.partial({ community: true }),
    snmpV3.partial({ authKey: true, privKey: true }),
  ]),
]);

export const ZUpdateUpsDevice = z.object({
  id: id("UPS"),
  name: upsName.optional(),
  source: ZUpsSourceChange.optional(),
  triggerOverrides: ZTriggerOverrides.optional(),
  outputCycle: ZOutputCycle.optional(),
});
export type TUpdateUpsDevice = z.infer<typeof ZUpdateUpsDevice>;

export const ZUpsDeviceRef = z.object({ id: id("UPS") });

const ADDRESS =
  /^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$|^\[?[0-9a-fA-F:.]+\]?$/;

const protection = {
  /** The UPS devices feeding it. */
  feeds: z
    .array(id("UPS"))
    .min(1, "Choose the UPS (or UPSes) that feed it.")
    .max(8)
    .refine((ids) => new Set(ids).size === ids.length, "A UPS is listed twice."),
  feedPolicy: z.enum(["all", "any"], {
    error: "Choose 'all' (redundant supplies: only when every feed fails) or 'any'.",
  }),
  /** Lower stages go first. */
  stage: z.coerce.number().int().min(0).max(99).default(0),
  /** The host the console runs on: shut down last. Never guessed; at most one. */
  runsConsole: z.boolean().default(false),
  enabled: z.boolean().default(true),
};

const pbsFields = {
  name: z
    .string()
    .trim()
    .min(1, "Enter a name for the backup server.")
    .max(64)
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, "Letters, digits, '.', '_' and '-'."),
  address: z
    .string()
    .trim()
    .min(1, "Enter the backup server's address.")
    .max(253)
    .regex(ADDRESS, "A host name or an IP address."),
  port: z.coerce.number().int().min(1).max(65535).default(8007),
  tokenId: z
    .string()
    .trim()
    .regex(
      /^[^\s@!:]+@[^\s@!:]+![A-Za-z0-9][A-Za-z0-9._-]*$/,
      "The token id as PBS shows it: user@realm!name.",
    ),
  tokenSecret: z.string().trim().min(1, "Enter the token's secret.").max(256),
  certSha256: z
    .string()
    .trim()
    .regex(
      /^([0-9A-Fa-f]{2}:?){31}[0-9A-Fa-f]{2}$/,
      "The SHA-256 fingerprint of its certificate, AB:CD:…",
    ),
};

export const ZCreatePowerTarget = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("pve-node"), hostId: id("host"), ...protection }),
  z.object({ kind: z.literal("pbs"), ...pbsFields, ...protection }),
]);
export type TCreatePowerTarget = z.infer<typeof ZCreatePowerTarget>;

export const ZUpdatePowerTarget = z.object({
  id: id("target"),
  feeds: protection.feeds.optional(),
  feedPolicy: protection.feedPolicy.optional(),
  stage: z.coerce.number().int().min(0).max(99).optional(),
  runsConsole: z.boolean().optional(),
  enabled: z.boolean().optional(),
  /** PBS only; a secret left out keeps the stored one. */
  name: pbsFields.name.optional(),
  address: pbsFields.address.optional(),
  port: z.coerce.number().int().min(1).max(65535).optional(),
  tokenId: pbsFields.tokenId.optional(),
  tokenSecret: pbsFields.tokenSecret.optional(),
  certSha256: pbsFields.certSha256.optional(),
});
export type TUpdatePowerTarget = z.infer<typeof ZUpdatePowerTarget>;

export const ZPowerTargetRef = z.object({ id: id("target") });

/**
 * Arming lists what the admin confirmed: the targets the confirmation showed. A plan that
 * changed in between is refused, so nobody arms a sequence they did not see.
 */
export const ZSetPowerMode = z.discriminatedUnion("mode", [
  z.object({ mode: z.literal("armed"), confirmedTargetIds: z.array(id("target")).max(1000) }),
  z.object({ mode: z.literal("dry-run") }),
]);
export type TSetPowerMode = z.infer<typeof ZSetPowerMode>;
export { POWER_MODES };

/** A change of the global settings; whatever is left out keeps its value. */
export const ZUpdatePowerSettings = z.object({
  triggers: ZTriggerOverrides.optional(),
  pollIntervalMs: z.coerce.number().int().min(200).max(60_000).optional(),
  shutdown: ZShutdownSettingsChange.optional(),
  powerBack: ZPowerBackSettingsChange.optional(),
  shed: ZShedSettingsChange.optional(),
});
export type TUpdatePowerSettings = z.infer<typeof ZUpdatePowerSettings>;

export const ZAcknowledgePowerEvent = z.object({ eventId: z.coerce.number().int().positive() });

export const ZReleaseLatch = z
  .object({
    upsId: id("UPS"),
    /**
     * The admin has read that the UPS is still on battery and that a release lets its trigger
     * fire again: needed while it is (last seen) on battery, ignored otherwise.
     */
    confirmDuringOutage: z
      .boolean({ error: "confirmDuringOutage is true or false." })
      .default(false),
  })
  .strict();

export const ZListPowerEvents = z.object({
  severity: z.enum(["info", "warning", "critical"]).optional(),
  upsId: id("UPS").optional(),
  kind: z.string().max(64).optional(),
  unacknowledged: z.coerce.boolean().optional(),
  /** Events older than this id (paging back). */
  before: z.coerce.number().int().positive().optional(),
  limit: z.coerce.number().int().min(1).max(500).default(100),
});
export type TListPowerEvents = z.infer<typeof ZListPowerEvents>;

export const ZUpsReadingsQuery = z.object({
  upsId: id("UPS"),
  from: z.coerce.date().optional(),
  to: z.coerce.date().optional(),
});
