import type { PreviewGroup } from "@/lib/power/shutdown-pipeline/plan-preview";
import type { UpsCard } from "@/lib/power/queries/ups-cards";
import type { PowerMode } from "@/lib/power/config/settings";
import { formatElapsed } from "../format";

/** A duration that never breaks inside ("3m 20s" is one value): its spaces do not break. */
const duration = (seconds: number) => formatElapsed(seconds).replaceAll(" ", "\u00a0");

/*
 * The first thing /power says per UPS: what will happen and when — "pve1, pve2 shut down in 3m 20s
 * (when runtime < 5m 00s)" — from the UPS's last reading, its triggers and the plan. Pure
 * (power-outlook.test.ts); `nowMs` is the console's clock as the page knows it.
 */

export type Outlook = {
  tone: "ok" | "warning" | "critical" | "unknown";
  text: string;
};

const list = (names: readonly string[]) =>
  names.length <= 1
    ? (names[0] ?? "")
    : `${names.slice(0, -1).join(", ")} and ${names[names.length - 1]}`;

export function powerOutlook(
  group: Pick<PreviewGroup, "targets">,
  card: UpsCard,
  mode: PowerMode,
  nowMs: number,
): Outlook {
  const names = list(group.targets.map((t) => t.name));
  const dry = mode === "dry-run";
  const goDown = dry ? "would shut down (dry-run)" : "shut down";
  if (group.targets.length === 0) {
    return { tone: "unknown", text: "feeds no protected target: nothing is shut down" };
  }
  // The latch notice under it says which trigger fired and when.
  if (card.latch && !card.latch.dormant) {
    return {
      tone: "critical",
      text: dry
        ? `trigger fired: ${names} would be shut down now — dry-run, nothing is sent`
        : `trigger fired: ${names} ${group.targets.length === 1 ? "is" : "are"} being shut down`,
    };
  }
  if (card.pending) {
    return {
      tone: "critical",
      text: `${card.pending.reason}: confirming — ${names} ${goDown} within seconds unless mains returns`,
    };
  }
  const t = card.triggers;
  if (card.condition === "not-asked") {
    return { tone: "unknown", text: `not read yet: ${names} ${goDown} once a trigger fires` };
  }
  if (card.condition === "no-reading") {
    return {
      tone: "critical",
      text:
        t.unreachableShutdownAfterSeconds !== null
          ? `no reliable reading: ${names} ${goDown} after ${duration(t.unreachableShutdownAfterSeconds)} without contact if last seen on battery`
          : `no reliable reading: ${names} are not shut down on a guess`,
    };
  }
  const dormant = card.latch?.dormant
    ? ` (the last trigger, ${card.latch.reason}, is dormant: mains came back)`
    : "";
  const reading = card.lastReading;
  const conditions: string[] = [];
  if (t.runtimeBelowSeconds !== null)
    conditions.push(`runtime < ${duration(t.runtimeBelowSeconds)}`);
  if (t.chargeBelowPercent !== null) conditions.push(`charge < ${t.chargeBelowPercent} %`);
  if (t.onBatteryForSeconds !== null)
    conditions.push(`after ${duration(t.onBatteryForSeconds)} on battery`);
  if (t.lowBattery) conditions.push("on the UPS's low battery");
  if (card.condition === "on-mains" || !reading?.onBattery) {
    return {
      tone: "ok",
      text:
        conditions.length === 0
          ? `on mains; no trigger is on: ${names} are never shut down${dormant}`
          : `on mains; on battery, ${names} ${goDown} when ${conditions.join(" or ")}${dormant}`,
    };
  }
  // On battery: the first trigger whose time can be told.
  const etas: { seconds: number; why: string }[] = [];
  if (t.runtimeBelowSeconds !== null && reading.runtimeSeconds !== null) {
    etas.push({
      seconds: reading.runtimeSeconds - t.runtimeBelowSeconds,
      why: `when runtime < ${duration(t.runtimeBelowSeconds)}`,
    });
  }
  if (t.onBatteryForSeconds !== null && card.onBatterySince) {
    etas.push({
      seconds: t.onBatteryForSeconds - (nowMs - Date.parse(card.onBatterySince)) / 1000,
      why: `after ${duration(t.onBatteryForSeconds)} on battery`,
    });
  }
  const first = etas.sort((a, b) => a.seconds - b.seconds)[0];
  const others: string[] = [];
  if (t.chargeBelowPercent !== null) others.push(`charge < ${t.chargeBelowPercent} %`);
  if (t.lowBattery) others.push("the UPS says low battery");
  if (!first) {
    return {
      tone: "warning",
      text:
        conditions.length === 0
          ? `on battery; no trigger is on: ${names} are never shut down`
          : `on battery: ${names} ${goDown} when ${conditions.join(" or ")}${dormant}`,
    };
  }
  return {
    tone: "warning",
    text:
      `on battery: ${names} ${goDown} in ${duration(Math.max(0, first.seconds))} (${first.why})` +
      (others.length > 0 ? `, sooner if ${others.join(" or ")}` : "") +
      dormant,
  };
}
