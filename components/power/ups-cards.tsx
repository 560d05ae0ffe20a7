"use client";

import { useQuery } from "@tanstack/react-query";
import type { PreviewGroup } from "@/lib/power/shutdown-pipeline/plan-preview";
import type { PowerOverview } from "@/lib/power/queries/power-overview";
import type { PowerPlanPage } from "@/lib/power/queries/power-plan";
import type { UpsCard } from "@/lib/power/queries/ups-cards";
import type { PowerMode } from "@/lib/power/config/settings";
import { formatElapsed } from "../format";
import { useFallbackRefetchInterval } from "../live-provider";
import { fetchJson } from "../queries";
import { usePowerPlan } from "./plan-preview";
import { powerOutlook } from "./power-outlook";
import { powerKeys } from "./power-keys";
import { ReleaseLatchButton } from "./release-latch-button";
import styles from "./power.module.css";
import { readingAge, timeOnBattery, upsHeadline, upsWarning } from "./ups-card-text";
import { useConsoleNow } from "./use-console-now";

export function usePowerOverview(initial: PowerOverview) {
  const refetchInterval = useFallbackRefetchInterval();
  return useQuery({
    queryKey: powerKeys.overview,
    queryFn: () => fetchJson<PowerOverview>("/api/power"),
    initialData: initial,
    refetchInterval,
  });
}

/**
 * A card per UPS, live: what it says now, what will happen and when (from the plan), and what the
 * console does not know.
 */
export function UpsCards({
  initial,
  initialPlan,
}: {
  initial: PowerOverview;
  initialPlan: PowerPlanPage;
}) {
  const { data, dataUpdatedAt, error } = usePowerOverview(initial);
  const { data: plan } = usePowerPlan(initialPlan);
  const now = useConsoleNow(data.serverTime, dataUpdatedAt);
  return (
    <section aria-labelledby="ups-heading">
      <h2 id="ups-heading">UPS devices</h2>
      {error && (
        <p className="notice notice-warning" role="status">
          Could not refresh: {error.message}. Showing the last known state.
        </p>
      )}
      {data.ups.length === 0 ? (
        <div className="empty" data-testid="ups-empty">
          <p>No UPS is configured: nothing is watched and nothing will be shut down.</p>
        </div>
      ) : (
        <div className={styles.cards}>
          {data.ups.map((card) => (
            <UpsCardView
              key={card.id}
              card={card}
              group={plan.groups.find((g) => g.ups.id === card.id) ?? { targets: [] }}
              now={now}
              pollIntervalMs={data.pollIntervalMs}
              mode={data.mode.mode}
            />
          ))}
        </div>
      )}
    </section>
  );
}

function UpsCardView({
  card,
  group,
  now,
  pollIntervalMs,
  mode,
}: {
  card: UpsCard;
  group: Pick<PreviewGroup, "targets">;
  now: number;
  pollIntervalMs: number;
  mode: PowerMode;
}) {
  const headline = upsHeadline(card);
  const warning = upsWarning(card, now, pollIntervalMs);
  const onBattery = timeOnBattery(card, now);
  const reading = card.lastReading;
  const stale = card.condition === "no-reading";
  const outlook = powerOutlook(group, card, mode, now);
  return (
    <article
      className={`${styles.card} ${styles[`tone-${headline.tone}`]}`}
      data-testid={`ups-card-${card.name}`}
      data-condition={card.condition}
      aria-labelledby={`ups-${card.id}-name`}
    >
      <div className={styles.cardHead}>
        <h3 id={`ups-${card.id}-name`}>{card.name}</h3>
        <span
          className={`${styles.headline} ${styles[`headline-${headline.tone}`]}`}
          data-testid="ups-status"
        >
          {headline.text}
        </span>
      </div>
      <p
        className={`${styles.outlook} ${styles[`headline-${outlook.tone}`]}`}
        data-testid="ups-outlook"
        data-tone={outlook.tone}
      >
        {outlook.text}
      </p>
      {warning && (
        <p className="notice notice-warning small" role="status" data-testid="ups-warning">
          {warning}
        </p>
      )}
      {card.latch && (
        // A div: the release button brings its dialog, which a <p> cannot hold (the parser
        // would close the paragraph before it and the page would no longer hydrate).
        <div className={`notice notice-error small ${styles.latch}`} data-testid="ups-latch">
          <span>
            Trigger latched{" "}
            <time dateTime={card.latch.at} className="nowrap">
              {formatElapsed((now - Date.parse(card.latch.at)) / 1000)} ago
            </time>
            : {card.latch.reason}
          </span>
          <ReleaseLatchButton card={card} mode={mode} />
        </div>
      )}
      <dl className={styles.figures}>
        <div>
          <dt>Charge{stale && " (last)"}</dt>
          <dd data-testid="ups-charge">
            {reading?.chargePercent != null ? `${Math.round(reading.chargePercent)} %` : "—"}
          </dd>
        </div>
        <div>
          <dt>Runtime{stale && " (last)"}</dt>
          <dd data-testid="ups-runtime">
            {reading?.runtimeSeconds != null ? formatElapsed(reading.runtimeSeconds) : "—"}
          </dd>
        </div>
        <div>
          <dt title="Measured by the console's own clock from the moment it saw mains fail; the UPS's own counter is never trusted.">
            On battery
          </dt>
          <dd data-testid="ups-on-battery" suppressHydrationWarning>
            {onBattery ?? "—"}
          </dd>
        </div>
      </dl>
      <dl className={styles.facts}>
        <div>
          <dt>Reachable</dt>
          <dd data-testid="ups-reachable">
            {card.reachable === null ? "not asked yet" : card.reachable ? "yes" : "no"}
          </dd>
        </div>
        <div>
          <dt>Last reading</dt>
          <dd data-testid="ups-reading-age" suppressHydrationWarning>
            {readingAge(card, now) ?? "never"}
            {reading && <span className="mono"> · {reading.rawStatus}</span>}
          </dd>
        </div>
        <div>
          <dt>Source</dt>
          <dd className="mono">{card.source}</dd>
        </div>
        <div>
          <dt>After a shutdown</dt>
          <dd data-testid="ups-output-cycle">
            {card.outputCycle
              ? "output cycled once every host on it is seen down"
              : "output left as it is (cycle off)"}
          </dd>
        </div>
      </dl>
    </article>
  );
}
