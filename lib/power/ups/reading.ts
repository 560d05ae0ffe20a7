import { z } from "zod";

/**
 * What one poll of a UPS says, in the console's terms, whichever protocol asked.
 *
 * `unreliable` is its own kind on purpose: a NUT `ERR DATA-STALE`, a driver that is not
 * connected, a refused or silent server, an SNMP timeout — none of them may ever read as
 * "on line" (or as "on battery"). The monitor raises an alarm on it and decides nothing.
 */
export type UpsReading =
  | {
      kind: "reading";
      /** The console's clock when the answer arrived. */
      at: Date;
      /** OB (NUT) or upsOutputSource = battery (SNMP). */
      onBattery: boolean;
      /** LB (NUT), batteryLow / batteryDepleted (SNMP). */
      lowBattery: boolean;
      /**
       * NUT's FSD: upsmon's primary has declared the end (also `upsmon -c fsd` by hand, e.g.
       * during NUT maintenance). Counts as low battery only together with on battery, unless
       * the admin turned on `forcedShutdownAlone` (lib/power/triggers/decide.ts). Absent: the
       * source has no such flag (SNMP).
       */
      forcedShutdown?: boolean;
      /** 0–100, or null when the UPS does not report it. */
      chargePercent: number | null;
      /** Estimated runtime left in seconds, or null when the UPS does not report it. */
      runtimeSeconds: number | null;
      /**
       * The UPS's own "seconds on battery" counter, kept for the record only: it is never used
       * for a decision (a network card once reported the previous outage's counter at the start
       * of the next one, and the hosts went down at once — PVE-UPS issue #25).
       */
      reportedSecondsOnBattery: number | null;
      /** The raw status as the UPS said it (NUT `ups.status` tokens, or SNMP values), for display. */
      rawStatus: string;
    }
  | {
      kind: "unreliable";
      at: Date;
      /** One line an operator can act on, e.g. `upsd at 10.0.0.9:3493 answered ERR DATA-STALE`. */
      reason: string;
      /** NUT's FSD without OL or OB (a driver still starting): see `forcedShutdown` above. */
      forcedShutdown?: boolean;
    };

/** One UPS's source of readings. Holds one persistent connection; reconnects by itself. */
export interface UpsSource {
  /** One poll. Never throws for a protocol or network problem: that is an `unreliable` reading. */
  read(): Promise<UpsReading>;
  /** Closes the connection; a later `read` may reopen it. */
  close(): Promise<void>;
  /**
   * Whether the console still has something to shut down on this UPS's power (at first: yes).
   * NUT: while it has, the console is logged in to upsd as a secondary, and the UPS's primary
   * upsmon waits for it (up to its HOSTSYNC) before it shuts its own machine down and the UPS
   * off; once it has not, the console logs out — as a secondary upsmon does once its shutdown
   * began — and reads on without logging in. Never rejects. Absent: the protocol has no such
   * thing (SNMP).
   */
  setNeeded?(needed: boolean): Promise<void>;
}

const NO_CONTROL_CHARACTERS = /^[^\x00-\x1f\x7f]*$/;

const host = z.string().trim().min(1, "Enter the UPS server's address").max(253);

/** A NUT server (`upsd`) and the UPS name it serves. The password is stored sealed. */
export const ZNutSourceSchema = z.object({
  type: z.literal("nut"),
  host,
  port: z.coerce.number().int().min(1).max(65535).default(3493),
  /** The UPS's name on that server, as in `upsc <ups>@<host>`. */
  upsName: z
    .string()
    .trim()
    .regex(/^[A-Za-z0-9_.-]{1,64}$/, "A NUT UPS name: letters, digits, '_', '.', '-'"),
  // A line break would end the protocol line and start another command.
  username: z
    .string()
    .trim()
    .max(64)
    .regex(NO_CONTROL_CHARACTERS, "Remove line breaks and control characters from the user name")
    .optional(),
  password: z
    .string()
    .max(256)
    .regex(NO_CONTROL_CHARACTERS, "Remove line breaks and control characters from the password")
    .optional(),
});

/** SNMPv3's authentication and privacy protocols (net-snmp's names); the UPS form offers these. */
export const ZSnmpAuthProtocol = z.enum(["sha", "sha256", "sha512", "md5"]);
export const ZSnmpPrivProtocol = z.enum(["aes", "aes256b", "aes256r", "des"]);

/** An SNMP agent with the UPS-MIB (RFC 1628). Community and v3 keys are stored sealed. */
export const ZSnmpSourceSchema = z.discriminatedUnion("version", [
  z.object({
    type: z.literal("snmp"),
    version: z.enum(["1", "2c"]),
    host,
    port: z.coerce.number().int().min(1).max(65535).default(161),
    community: z.string().min(1, "Enter the SNMP community").max(64),
  }),
  z.object({
    type: z.literal("snmp"),
    version: z.literal("3"),
    host,
    port: z.coerce.number().int().min(1).max(65535).default(161),
    user: z.string().trim().min(1).max(32),
    authProtocol: ZSnmpAuthProtocol,
    authKey: z.string().min(8, "SNMPv3 keys have at least 8 characters").max(256),
    privProtocol: ZSnmpPrivProtocol,
    privKey: z.string().min(8, "SNMPv3 keys have at least 8 characters").max(256),
  }),
]);

export type TNutSource = z.infer<typeof ZNutSourceSchema>;
export type TSnmpSource = z.infer<typeof ZSnmpSourceSchema>;
export type TUpsSourceConfig = TNutSource | TSnmpSource;
