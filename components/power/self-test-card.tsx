"use client";

import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useState, useTransition } from "react";
import { runSelfTestAction } from "@/lib/actions/power/run-self-test";
import type { SelfTestOverview } from "@/lib/power/self-test/latest-self-test";
import {
  VERDICT_LABEL,
  type SelfTestCheck,
  type SelfTestVerdict,
} from "@/lib/power/self-test/verdict";
import { useCan } from "../actor-context";
import { useHydrated } from "../use-now";
import { auditActionWords } from "../audit-words";
import { LocalTime } from "../local-time";
import { useFallbackRefetchInterval } from "../live-provider";
import { fetchJson } from "../queries";
import { powerKeys } from "./power-keys";
import styles from "./power.module.css";

/** Refreshed by every power event (a configuration change is one) and by everything-messages. */
const SELF_TEST_KEY = powerKeys.selfTest;

const TONE: Record<SelfTestVerdict, "ok" | "warning" | "critical" | "unknown"> = {
  ok: "ok",
  warning: "warning",
  failed: "critical",
  "could-not-check": "unknown",
};
const ORDER: SelfTestVerdict[] = ["failed", "could-not-check", "warning", "ok"];
const OCCASION: Record<string, string> = {
  schedule: "hourly run",
  armed: "after arming",
  "start-up": "at the worker's start",
  button: "run by hand",
};

/**
 * The self-test of the shutdown path: its verdict, then each check worst first with what it
 * found and what to do. "Could not check" has its own grey verdict, never the green of ok.
 */
export function SelfTestCard({ initial }: { initial: SelfTestOverview }) {
  const refetchInterval = useFallbackRefetchInterval();
  const { data } = useQuery({
    queryKey: SELF_TEST_KEY,
    queryFn: () => fetchJson<SelfTestOverview>("/api/power/self-test"),
    initialData: initial,
    refetchInterval,
  });
  const { latest, skippedSince, lastWebhookTest, lastChange } = data;
  // The run asked for by hand, until a newer result (or a skip) shows: then its note goes.
  const [asked, setAsked] = useState<Asked | null>(null);
  // What the card showed when the button was pressed: once that changes, the result is here.
  const shownKey = `${latest?.id ?? ""}|${skippedSince?.at ?? ""}`;
  const askedShown = asked && (asked.error || asked.before === shownKey) ? asked : null;
  const stale =
    latest !== null &&
    lastChange !== null &&
    Date.parse(lastChange.at) > Date.parse(latest.startedAt);
  const tone = latest ? (stale ? "unknown" : TONE[latest.verdict]) : "unknown";
  const checks = latest ? worstFirst(latest.checks) : [];
  return (
    <section className="panel" aria-labelledby="self-test-heading" data-testid="self-test">
      <div className={styles.cardHead}>
        <h2 id="self-test-heading">Self-test</h2>
        <RunSelfTestButton before={shownKey} onAsked={setAsked} />
      </div>
      {askedShown && (
        <p
          className={`small ${askedShown.error ? "notice notice-error" : "muted"}`}
          role={askedShown.error ? "alert" : "status"}
          data-testid="run-self-test-message"
        >
          {askedShown.text}
        </p>
      )}
      {latest === null ? (
        <p className="muted" data-testid="self-test-none">
          Not run yet: the worker runs it at its start, every hour and after arming.
        </p>
      ) : (
        <div
          className={`${styles.card} ${styles[`tone-${tone}`]}`}
          data-testid="self-test-result"
          data-stale={stale ? "true" : "false"}
        >
          {stale && lastChange && (
            <p className="notice notice-warning small" role="status" data-testid="self-test-stale">
              Before the last change — run again: {auditActionWords(lastChange.action)} by{" "}
              {lastChange.by} at <LocalTime iso={lastChange.at} />, after this self-test ran. What
              it found below may no longer hold.
            </p>
          )}
          <p>
            <span
              className={`${styles.headline} ${styles[`headline-${tone}`]}`}
              data-testid="self-test-verdict"
              data-verdict={latest.verdict}
            >
              {VERDICT_LABEL[latest.verdict]}
              {stale && " (before the last change)"}
            </span>{" "}
            <span className="muted small" data-testid="self-test-when">
              <LocalTime iso={latest.finishedAt} /> · {OCCASION[latest.occasion] ?? latest.occasion}
              {latest.requestedBy ? ` by ${latest.requestedBy}` : ""}
            </span>
          </p>
          <ChecksTable checks={checks} asOf={latest.finishedAt} stale={stale} />
          {lastWebhookTest && (
            <div data-testid="self-test-last-webhook-test">
              <p className="small">
                Webhooks, as last tested by hand <LocalTime iso={lastWebhookTest.finishedAt} />
                {lastWebhookTest.requestedBy ? ` by ${lastWebhookTest.requestedBy}` : ""} — only a
                run by hand sends test messages:
              </p>
              <ChecksTable
                checks={worstFirst(lastWebhookTest.checks)}
                asOf={lastWebhookTest.finishedAt}
                stale={false}
              />
            </div>
          )}
        </div>
      )}
      {skippedSince && (
        <p className="small" data-testid="self-test-skipped">
          Skipped <LocalTime iso={skippedSince.at} />: {skippedSince.reason}
        </p>
      )}
    </section>
  );
}

const worstFirst = (checks: readonly SelfTestCheck[]) =>
  [...checks].sort((a, b) => ORDER.indexOf(a.verdict) - ORDER.indexOf(b.verdict));

function ChecksTable({
  checks,
  asOf,
  stale,
}: {
  checks: readonly SelfTestCheck[];
  asOf: string;
  stale: boolean;
}) {
  return (
    <div className="table-scroll">
      <table className={`${styles.table} stack-on-phone ${stale ? styles.stale : ""}`}>
        <thead>
          <tr>
            <th scope="col">Verdict</th>
            <th scope="col">Check</th>
            <th scope="col">
              Found, as of <LocalTime iso={asOf} clock />
            </th>
            <th scope="col">What to do</th>
          </tr>
        </thead>
        <tbody>
          {checks.map((check) => (
            <tr key={check.key} data-testid="self-test-check" data-verdict={check.verdict}>
              <td
                className={`${styles.severity} ${styles[`headline-${TONE[check.verdict]}`]}`}
                data-label="Verdict"
              >
                {VERDICT_LABEL[check.verdict]}
              </td>
              <th scope="row">{check.title}</th>
              <td data-label="Found">{check.reason}</td>
              <td data-label="What to do">{check.next ?? "—"}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/**
 * Operators and admins run it now; the result arrives on the live stream. The button keeps its
 * place; what it answered is shown under the card's heading until the result is there.
 */
type Asked = { text: string; error: boolean; before: string };

function RunSelfTestButton({
  before,
  onAsked,
}: {
  before: string;
  onAsked: (asked: Asked) => void;
}) {
  const canRun = useCan("operator");
  const queryClient = useQueryClient();
  const [pending, startTransition] = useTransition();
  // Server-rendered, the button has no handler until the page hydrates: a press then would do
  // nothing and say nothing, so it is disabled until it can act.
  const hydrated = useHydrated();
  if (!canRun) return null;
  const run = () =>
    startTransition(async () => {
      const result = await runSelfTestAction({});
      onAsked({ text: result.message, error: !result.ok, before });
      await queryClient.invalidateQueries({ queryKey: SELF_TEST_KEY });
    });
  return (
    <button
      type="button"
      className="button"
      onClick={run}
      disabled={pending || !hydrated}
      data-testid="run-self-test"
    >
      {pending ? "Queuing…" : "Run self-test now"}
    </button>
  );
}
