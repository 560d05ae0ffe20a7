import type { ShedSettings } from "@/lib/power/config/settings";
import type { FeedPolicy } from "@/lib/power/targets/due-targets";

/**
 * A guest's tags as Proxmox keeps them: its config's `tags` property, split on `;` (what the GUI
 * writes), `,` or spaces (what pve-common's `split_list` also accepts), lower-cased — tags compare
 * without case unless a datacenter sets `tag-style case-sensitive=1`, which the console does not
 * follow: a shed tag that differs from a guest's only in case still marks it.
 */
export function guestTags(tags: unknown): string[] {
  if (typeof tags !== "string") return [];
  return tags
    .split(/[;, ]+/)
    .map((t) => t.trim().toLowerCase())
    .filter((t) => t.length > 0);
}

/** Whether the settings mark this guest as shed: it carries the tag, or it is on the list. */
export function isShedGuest(
  guest: { node: string; vmid: number; tags?: unknown },
  settings: Pick<ShedSettings, "tag" | "guests">,
): boolean {
  if (guestTags(guest.tags).includes(settings.tag.toLowerCase())) return true;
  return settings.guests.some((g) => g.node === guest.node && g.vmid === guest.vmid);
}

/** What the shed decision reads of one UPS: the monitor's persisted state. */
export type ShedFeed = {
  upsId: string;
  name: string;
  /** A fresh, reliable reading (the monitor reads it now). */
  fresh: boolean;
  onBattery: boolean | null;
  /** On battery this long in the current outage, by the monitor's monotonic clock. */
  onBatteryMs: number | null;
  /** When the console saw the mains→battery transition: names the outage. */
  onBatterySince: Date | null;
  /** The main trigger has fired in this outage (a latch that is not dormant). */
  latched: boolean;
};

export type ShedTarget = { id: string; name: string; feedPolicy: FeedPolicy; feeds: string[] };

export type ShedDue = {
  targetId: string;
  /** The outage of each feed that made it due, `upsId@onBatterySince`: one shed per outage. */
  outages: string[];
  why: string;
};

/**
 * Which targets' shed guests go down now — one row per condition, the first that fails says no:
 *
 * | row | condition | else |
 * |---|---|---|
 * | 1 | shedding is on | nothing is shed (the default: an operator opts in) |
 * | 2 | no feed of the target has latched the main trigger | the main shutdown has it: it wins |
 * | 3 | its feeds read fresh and reliably on battery ≥ `afterMinutes` (monotonic), one (`any`) or every one (`all`) | not yet — a blip shorter than that never sheds |
 *
 * A feed that cannot be read counts as not on battery: shedding is an optional stretch of the
 * runtime, and "could not ask" is no evidence to shut anything down early. Pure.
 */
export function shedDueTargets(input: {
  settings: Pick<ShedSettings, "enabled" | "afterMinutes">;
  targets: readonly ShedTarget[];
  feeds: ReadonlyMap<string, ShedFeed>;
}): ShedDue[] {
  const { settings, targets, feeds } = input;
  // Row 1.
  if (!settings.enabled) return [];
  const afterMs = settings.afterMinutes * 60_000;
  const due: ShedDue[] = [];
  for (const target of targets) {
    const own = target.feeds.map((id) => feeds.get(id));
    if (own.length === 0) continue;
    // Row 2.
    if (own.some((f) => f?.latched)) continue;
    // Row 3.
    const long = own.filter(
      (f): f is ShedFeed =>
        f !== undefined &&
        f.fresh &&
        f.onBattery === true &&
        f.onBatterySince !== null &&
        (f.onBatteryMs ?? 0) >= afterMs,
    );
    const holds = target.feedPolicy === "all" ? long.length === own.length : long.length > 0;
    if (!holds) continue;
    due.push({
      targetId: target.id,
      outages: long.map((f) => `${f.upsId}@${f.onBatterySince!.toISOString()}`),
      why: `${long.map((f) => f.name).join(", ")} on battery for ${settings.afterMinutes} min`,
    });
  }
  return due;
}
