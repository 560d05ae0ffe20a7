/**
 * Which targets the latched UPSes make due. `any`: one latched feed is enough; `all`: every feed
 * must be failing (a host with redundant power supplies stays up while one feed is on mains).
 * A feed fails when its UPS latched — or when the console cannot ask it (`unknownFeeds`: no
 * reliable reading, or none recent): "could not ask" never reads as "on mains", so a second
 * UPS whose network card died does not keep a host up until its first supply dies hard. At
 * least one feed must have latched: an unknown feed alone makes nothing due.
 * A target with no feed, or turned off, is never due.
 *
 * `dueSince` is when the target became due in this outage: the earliest latch of its feeds for
 * `any`, the latest for `all`. It names the outage, so a second run for the same target and the
 * same outage is recognised, while a new outage after the latches were released is a new one.
 */

export type FeedPolicy = "all" | "any";

export type FedTarget = {
  id: string;
  feedPolicy: FeedPolicy;
  enabled: boolean;
  feeds: readonly string[];
};

export type DueTarget = { targetId: string; dueSince: Date };

export function dueTargets(
  targets: readonly FedTarget[],
  latchedAt: ReadonlyMap<string, Date>,
  unknownFeeds: ReadonlySet<string> = new Set(),
): DueTarget[] {
  const due: DueTarget[] = [];
  for (const target of targets) {
    if (!target.enabled || target.feeds.length === 0) continue;
    const latches = target.feeds.flatMap((upsId) => {
      const at = latchedAt.get(upsId);
      return at ? [at.getTime()] : [];
    });
    const failing = target.feeds.filter((upsId) => latchedAt.has(upsId) || unknownFeeds.has(upsId));
    if (target.feedPolicy === "all" && failing.length < target.feeds.length) continue;
    if (latches.length === 0) continue;
    const since = target.feedPolicy === "all" ? Math.max(...latches) : Math.min(...latches);
    due.push({ targetId: target.id, dueSince: new Date(since) });
  }
  return due;
}

/**
 * Whether a due target's feeds say the power is back: its policy is no longer met by feeds that
 * are on battery or cannot be asked. Only a reliable "on mains" counts as back — a UPS that does
 * not answer might still be on battery.
 */
export function mainsBackFor(
  target: Pick<FedTarget, "feedPolicy" | "feeds">,
  feedOnMains: ReadonlyMap<string, boolean>,
): boolean {
  const failing = target.feeds.filter((upsId) => feedOnMains.get(upsId) !== true);
  return target.feedPolicy === "all" ? failing.length < target.feeds.length : failing.length === 0;
}
