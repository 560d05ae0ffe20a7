import { z } from "zod";
import {
  ZNutSourceSchema,
  ZSnmpSourceSchema,
  type TUpsSourceConfig,
} from "@/lib/power/ups/reading";

/**
 * A UPS source's settings split in two: what may be stored in the clear and shown (address,
 * port, UPS name, user, protocols) and its secrets (NUT password, SNMP community, SNMPv3 keys),
 * which are sealed in a credential and never leave the server.
 */

const [snmpV1V2c, snmpV3] = ZSnmpSourceSchema.options;

export const ZPublicUpsSource = z.discriminatedUnion("type", [
  ZNutSourceSchema.omit({ password: true }),
  z.discriminatedUnion("version", [
    snmpV1V2c.omit({ community: true }),
    snmpV3.omit({ authKey: true, privKey: true }),
  ]),
]);
export type PublicUpsSource = z.infer<typeof ZPublicUpsSource>;

export const ZUpsSourceSecret = z.object({
  password: z.string().optional(),
  community: z.string().optional(),
  authKey: z.string().optional(),
  privKey: z.string().optional(),
});
export type UpsSourceSecret = z.infer<typeof ZUpsSourceSecret>;

/** Settings as entered → the clear part and the secret part (null when there is none). */
export function splitUpsSource(config: TUpsSourceConfig): {
  source: PublicUpsSource;
  secret: UpsSourceSecret | null;
} {
  if (config.type === "nut") {
    const { password, ...source } = config;
    return { source, secret: password ? { password } : null };
  }
  if (config.version === "3") {
    const { authKey, privKey, ...source } = config;
    return { source, secret: { authKey, privKey } };
  }
  const { community, ...source } = config;
  return { source, secret: { community } };
}

/** The full settings a source connects with; refuses a stored secret that does not fit. */
export function joinUpsSource(
  source: PublicUpsSource,
  secret: UpsSourceSecret | null,
): TUpsSourceConfig {
  const merged = { ...source, ...(secret ?? {}) };
  const parsed =
    source.type === "nut"
      ? ZNutSourceSchema.safeParse(merged)
      : ZSnmpSourceSchema.safeParse(merged);
  if (!parsed.success) {
    throw new Error(
      `The stored settings of this UPS are incomplete (${parsed.error.issues[0]?.path.join(".") ?? "?"}); edit the UPS and enter its credentials again.`,
    );
  }
  return parsed.data;
}

/** One line naming the source for cards and logs: `NUT ups1@10.0.0.9:3493`, `SNMP v2c 10.0.0.8:161`. */
export function describeUpsSource(source: PublicUpsSource): string {
  if (source.type === "nut") return `NUT ${source.upsName}@${source.host}:${source.port}`;
  return `SNMP v${source.version} ${source.host}:${source.port}`;
}
