"use client";

import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import type { DeliveryView, TargetCard } from "@/lib/notify/deliveries";
import { FORMAT_LABELS } from "@/lib/notify/formats";
import { kindTitle } from "@/lib/notify/message";
import { useCan } from "../actor-context";
import { formatDateTime } from "../format";
import { useFallbackRefetchInterval } from "../live-provider";
import styles from "../power/power.module.css";
import { fetchJson } from "../queries";
import { notifyKeys } from "./notify-keys";
import { AcknowledgeFailuresButton, DeleteTargetButton, TestTargetButton } from "./target-actions";

function deliveryLine(d: DeliveryView): string {
  const what = `${kindTitle(d.kind)} (${d.severity})`;
  switch (d.state) {
    case "delivered":
      return `${what}: delivered ${formatDateTime(d.deliveredAt!)} after ${d.attempts} attempt(s)`;
    case "pending":
      return `${what}: being sent`;
    case "acknowledged":
      return `${what}: not delivered, acknowledged`;
    case "failed":
      return `${what}: failed ${d.attempts} time(s) — ${d.lastError ?? "no answer"}${
        d.nextAttemptAt ? `; next try ${formatDateTime(d.nextAttemptAt)}` : "; no more tries"
      }`;
  }
}

/** The newer of the last delivery and the last Test (a real message too, but no delivery). */
function lastLine(delivery: DeliveryView | null, test: TargetCard["lastTest"]): string {
  const deliveredAt = delivery
    ? (delivery.deliveredAt ?? delivery.lastAttemptAt ?? delivery.createdAt)
    : null;
  if (test && (!deliveredAt || Date.parse(test.at) >= Date.parse(deliveredAt))) {
    return `Test message by ${test.by}: ${test.ok ? "delivered" : "not delivered"} ${formatDateTime(test.at)} (${test.answer})`;
  }
  return delivery ? deliveryLine(delivery) : "none yet";
}

/**
 * The notification targets as cards: where each sends (the URL's origin only), what it gets,
 * its last delivery, and every delivery still failing, with Test and Acknowledge at hand.
 */
export function NotificationTargetCards({ initial }: { initial: TargetCard[] }) {
  const isAdmin = useCan("admin");
  const canAcknowledge = useCan("operator");
  const refetchInterval = useFallbackRefetchInterval();
  const { data: cards } = useQuery({
    queryKey: notifyKeys.cards,
    queryFn: async () =>
      (await fetchJson<{ cards: TargetCard[] }>("/api/notifications/targets")).cards,
    initialData: initial,
    refetchInterval,
  });
  if (cards.length === 0) {
    return (
      <p className="muted" data-testid="notify-no-targets">
        No notification targets yet: nobody is told when the power fails.
      </p>
    );
  }
  return (
    <div className={styles.cards} data-testid="notify-cards">
      {cards.map(({ target, lastDelivery, lastTest, failing }) => (
        <section
          key={target.id}
          id={`target-${target.id}`}
          className={`${styles.card} ${styles[failing.length > 0 ? "tone-critical" : target.enabled ? "tone-ok" : "tone-unknown"]}`}
          data-testid={`notify-card-${target.name}`}
        >
          <div className={styles.cardHead}>
            <h3>{target.name}</h3>
            <span className="muted small">{target.enabled ? "enabled" : "disabled"}</span>
          </div>
          <dl className={styles.facts}>
            <div>
              <dt>Format</dt>
              <dd>{FORMAT_LABELS[target.format]}</dd>
            </div>
            <div>
              <dt>Sends to</dt>
              <dd>{target.urlOrigin}/…</dd>
            </div>
            <div>
              <dt>Events</dt>
              <dd>
                {target.minSeverity} and above;{" "}
                {target.eventKinds.length === 0 ? "every kind" : target.eventKinds.join(", ")}
              </dd>
            </div>
            <div>
              <dt>Auth header</dt>
              <dd>{target.hasAuthHeader ? `${target.authHeaderName}: set` : "none"}</dd>
            </div>
            <div>
              <dt>Last delivery</dt>
              <dd data-testid={`notify-last-${target.name}`} suppressHydrationWarning>
                {lastLine(lastDelivery, lastTest)}
              </dd>
            </div>
          </dl>
          {failing.length > 0 && (
            <div className="notice notice-error" data-testid={`notify-failing-${target.name}`}>
              <p>
                <strong>{failing.length} not delivered</strong>
              </p>
              <ul>
                {failing.map((d) => (
                  <li key={d.id} suppressHydrationWarning>
                    {deliveryLine(d)}
                  </li>
                ))}
              </ul>
              {canAcknowledge && <AcknowledgeFailuresButton targetId={target.id} />}
            </div>
          )}
          {isAdmin && (
            <div className={styles.inlineActions}>
              <TestTargetButton targetId={target.id} />
              <Link
                href={`/power/notifications?edit=${target.id}`}
                className="button"
                data-testid={`notify-edit-${target.name}`}
              >
                Edit
              </Link>
              <DeleteTargetButton targetId={target.id} name={target.name} />
            </div>
          )}
        </section>
      ))}
    </div>
  );
}
