"use client";

import { useQuery } from "@tanstack/react-query";
import type { PowerOverview } from "@/lib/power/queries/power-overview";
import type { UpsCard } from "@/lib/power/queries/ups-cards";
import type { PowerMode } from "@/lib/power/settings";
import { formatElapsed } from "../format";
import { useFallbackRefetchInterval } from "../live-provider";
import { fetchJson } from "../queries";
import { powerKeys } from "./power-keys";
import { ReleaseLatchButton } from "./release-latch-button";
import styles from "./power.module.css";
import {
  readingAge,
  timeOnBattery,
  triggerSummary,
  upsHeadline,
  upsWarning,
} from "./ups-card-text";
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

/** A card per UPS, live: what it says now, and what the console does not know. */
export function UpsCards({ initial }: { initial: PowerOverview }) {
  const { data, dataUpdatedAt, error } = usePowerOverview(initial);
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
  now,
  pollIntervalMs,
  mode,
}: {
  card: UpsCard;
  now: number;
  pollIntervalMs: number;
  mode: PowerMode;
}) {
  const headline = upsHeadline(card);
  const warning = upsWarning(card, now, pollIntervalMs);
  const onBattery = timeOnBattery(card, now);
  const reading = card.lastReading;
  const stale = card.condition === "no-reading";
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
      {warning && (
        <p className="notice notice-warning small" role="status" data-testid="ups-warning">
          {warning}
        </p>
      )}
      {card.latch && (
        <p className="notice notice-error small" data-testid="ups-latch">
          Trigger latched{" "}
          <time dateTime={card.latch.at} suppressHydrationWarning>
            {formatElapsed((now - Date.parse(card.latch.at)) / 1000)} ago
          </time>
          : {card.latch.reason} <ReleaseLatchButton card={card} mode={mode} />
        </p>
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
          <dt>Fires at</dt>
          <dd>{triggerSummary(card.triggers)}</dd>
        </div>
      </dl>
    </article>
  );
}
