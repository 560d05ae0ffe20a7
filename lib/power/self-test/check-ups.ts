import type { Database } from "@/lib/db/client";
import type { upsDevices } from "@/lib/db/schema";
import { safeErrorSummary } from "@/lib/errors";
import { formatDuration } from "@/lib/logs/text";
import { readSecret } from "../config/ups-secret-store";
import { joinUpsSource } from "../config/ups-source-config";
import { NutConnectionPool } from "../ups/nut/pool";
import type { UpsReading } from "../ups/reading";
import { createUpsSource } from "../ups/source";
import type { SelfTestCheck } from "./verdict";

type UpsDevice = Pick<
  typeof upsDevices.$inferSelect,
  "id" | "name" | "source" | "secretCredentialId"
>;

/**
 * Asks the UPS once, on a connection of its own (the monitor's stays untouched), and judges
 * whether what it says is plausible.
 */
export async function checkUps(
  db: Database,
  device: UpsDevice,
  options: { timeoutMs: number },
): Promise<SelfTestCheck> {
  // A pool of its own: closing the self-test's source must not close the monitor's connection.
  const pool = new NutConnectionPool();
  let reading: UpsReading;
  try {
    const source = createUpsSource(
      joinUpsSource(device.source, await readSecret(db, device.secretCredentialId)),
      { deadlineMs: options.timeoutMs, nutPool: pool },
    );
    try {
      reading = await source.read();
    } finally {
      await source.close().catch(() => {});
    }
  } catch (error) {
    reading = { kind: "unreliable", at: new Date(), reason: safeErrorSummary(error) };
  }
  return judgeUpsReading(device, reading);
}

/**
 * Whether a UPS's answer is one the triggers can act on: a known status, a charge of 0–100 %,
 * and on mains a runtime above zero (a UPS that says 0 s on mains would fire the runtime
 * trigger the moment it goes on battery; one that says nothing leaves that trigger blind).
 */
export function judgeUpsReading(
  device: Pick<UpsDevice, "id" | "name">,
  reading: UpsReading,
): SelfTestCheck {
  const result = (
    verdict: SelfTestCheck["verdict"],
    reason: string,
    next: string | null = null,
  ): SelfTestCheck => ({
    key: `ups:${device.id}`,
    title: `${device.name}: the UPS answers with plausible values`,
    subject: device.name,
    verdict,
    reason,
    next,
  });
  if (reading.kind === "unreliable") {
    return result(
      "failed",
      `No reliable reading: ${reading.reason}. During an outage the console would see nothing to act on.`,
      "Check the NUT server or SNMP agent and the UPS's link to it (upsc, snmpget), then run the self-test again.",
    );
  }
  const { chargePercent: charge, runtimeSeconds: runtime, rawStatus } = reading;
  const said = `status ${rawStatus}, charge ${charge === null ? "not reported" : `${charge} %`}, runtime ${runtime === null ? "not reported" : formatDuration(runtime * 1000)}`;
  if (charge !== null && (charge < 0 || charge > 100)) {
    return result(
      "failed",
      `It says ${said}: a charge outside 0–100 % is not plausible.`,
      "Check the UPS's driver or MIB settings.",
    );
  }
  if (!reading.onBattery && runtime !== null && runtime <= 0) {
    return result(
      "failed",
      `It says ${said}: no runtime left while on mains is not plausible, and the runtime trigger would fire the moment it goes on battery.`,
      "Check the UPS's driver settings (NUT: override battery.runtime or use another driver) or its battery.",
    );
  }
  const blind = [
    charge === null ? "the charge trigger" : null,
    runtime === null ? "the runtime trigger and the plan's reserve" : null,
  ].filter((x) => x !== null);
  if (blind.length > 0) {
    return result(
      "warning",
      `It says ${said}: ${blind.join(" and ")} cannot work without it; only low battery and time on battery can fire.`,
      "Use a driver or MIB that reports battery.charge and battery.runtime, or rely on the time-on-battery trigger.",
    );
  }
  return result("ok", `It says ${said}.`);
}
