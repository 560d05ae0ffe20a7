import { NutUpsSource } from "./nut/source";
import type { NutConnectionPool } from "./nut/pool";
import type { TUpsSourceConfig, UpsSource } from "./reading";
import { SnmpUpsSource } from "./snmp/source";

export type UpsSourceOptions = {
  /** Every read answers within this time, reading or unreliable. Default 2 s. */
  deadlineMs?: number;
  /** NUT connections to share; default: the process-wide pool. */
  nutPool?: NutConnectionPool;
};

/** The source for a UPS's settings (secrets already opened): NUT or SNMP. */
export function createUpsSource(
  config: TUpsSourceConfig,
  options: UpsSourceOptions = {},
): UpsSource {
  const deadline = options.deadlineMs === undefined ? {} : { deadlineMs: options.deadlineMs };
  if (config.type === "nut") {
    return new NutUpsSource(config, {
      ...deadline,
      ...(options.nutPool === undefined ? {} : { pool: options.nutPool }),
    });
  }
  return new SnmpUpsSource(config, deadline);
}
