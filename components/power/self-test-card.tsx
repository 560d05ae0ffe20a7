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
import { formatDateTime } from "../format";
import { useFallbackRefetchInterval } from "../live-provider";
import { fetchJson } from "../queries";
import styles from "./power.module.css";

/** Under ["power"]: every power live message that refreshes everything refreshes this too. */
const SELF_TEST_KEY = ["power", "self-test"] as const;

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
  const { latest, skippedSince, lastWebhookTest } = data;
  const tone = latest ? TONE[latest.verdict] : "unknown";
  const checks = latest ? worstFirst(latest.checks) : [];
  return (
    <section className="panel" aria-labelledby="self-test-heading" data-testid="self-test">
      <div className={styles.cardHead}>
        <h2 id="self-test-heading">Self-test</h2>
        <RunSelfTestButton />
      </div>
      {latest === null ? (
        <p className="muted" data-testid="self-test-none">
          Not run yet: the worker runs it at its start, every hour and after arming.
        </p>
      ) : (
        <div className={`${styles.card} ${styles[`tone-${tone}`]}`}>
          <p>
            <span
              className={`${styles.headline} ${styles[`headline-${tone}`]}`}
              data-testid="self-test-verdict"
              data-verdict={latest.verdict}
            >
              {VERDICT_LABEL[latest.verdict]}
            </span>{" "}
            <span className="muted small" data-testid="self-test-when">
              {formatDateTime(latest.finishedAt)} · {OCCASION[latest.occasion] ?? latest.occasion}
              {latest.requestedBy ? ` by ${latest.requestedBy}` : ""}
            </span>
          </p>
          <ChecksTable checks={checks} />
          {lastWebhookTest && (
            <div data-testid="self-test-last-webhook-test">
              <p className="small">
                Webhooks, as last tested by hand {formatDateTime(lastWebhookTest.finishedAt)}
                {lastWebhookTest.requestedBy ? ` by ${lastWebhookTest.requestedBy}` : ""} — only a
                run by hand sends test messages:
              </p>
              <ChecksTable checks={worstFirst(lastWebhookTest.checks)} />
            </div>
          )}
        </div>
      )}
      {skippedSince && (
        <p className="small" data-testid="self-test-skipped">
          Skipped {formatDateTime(skippedSince.at)}: {skippedSince.reason}
        </p>
      )}
    </section>
  );
}

const worstFirst = (checks: readonly SelfTestCheck[]) =>
  [...checks].sort((a, b) => ORDER.indexOf(a.verdict) - ORDER.indexOf(b.verdict));

function ChecksTable({ checks }: { checks: readonly SelfTestCheck[] }) {
  return (
    <table className={styles.table}>
      <thead>
        <tr>
          <th scope="col">Verdict</th>
          <th scope="col">Check</th>
          <th scope="col">Found</th>
          <th scope="col">What to do</th>
        </tr>
      </thead>
      <tbody>
        {checks.map((check) => (
          <tr key={check.key} data-testid="self-test-check" data-verdict={check.verdict}>
            <td className={`${styles.severity} ${styles[`headline-${TONE[check.verdict]}`]}`}>
              {VERDICT_LABEL[check.verdict]}
            </td>
            <th scope="row">{check.title}</th>
            <td>{check.reason}</td>
            <td>{check.next ?? "—"}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** Operators and admins run it now; the result arrives on the live stream. */
function RunSelfTestButton() {
  const canRun = useCan("operator");
  const queryClient = useQueryClient();
  const [message, setMessage] = useState<{ text: string; error: boolean } | null>(null);
  const [pending, startTransition] = useTransition();
  if (!canRun) return null;
  const run = () =>
    startTransition(async () => {
      const result = await runSelfTestAction({});
      setMessage(
        result.ok ? { text: result.message, error: false } : { text: result.message, error: true },
      );
      await queryClient.invalidateQueries({ queryKey: SELF_TEST_KEY });
    });
  return (
    <div>
      <button
        type="button"
        className="button"
        onClick={run}
        disabled={pending}
        data-testid="run-self-test"
      >
        {pending ? "Queuing…" : "Run self-test now"}
      </button>
      {message && (
        <p
          className={`small ${message.error ? "notice-error" : "muted"}`}
          role={message.error ? "alert" : "status"}
          data-testid="run-self-test-message"
        >
          {message.text}
        </p>
      )}
    </div>
  );
}
