"use client";

import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useState, useTransition } from "react";

import { rotateConsoleKeyAction } from "@/lib/actions/rotate-console-key";
import type { ConsoleKeyOverview } from "@/lib/console-key/overview";

import { useCan } from "./actor-context";
import { ConfirmDialog } from "./confirm-dialog";
import styles from "./console-key.module.css";
import { CopyField } from "./copy-field";
import { liveKeys } from "./live-keys";
import { useFallbackRefetchInterval } from "./live-provider";
import { fetchJson } from "./queries";

/** The overview as JSON carries it: every Date an ISO string. */
type Jsonified<T> = T extends Date
  ? string
  : T extends Array<infer U>
    ? Jsonified<U>[]
    : T extends object
      ? { [K in keyof T]: Jsonified<T[K]> }
      : T;
export type ConsoleKeyOverviewJson = Jsonified<ConsoleKeyOverview>;

const OUTCOME_LABEL = {
  pending: "waiting",
  switched: "switched",
  new_key_refused: "new key refused — old key kept",
  unreachable: "not switched — old key kept",
} as const;

/**
 * The key, its install command, "Rotate key" (admin) and the latest rotation's per-host
 * progress. Live: the rotation run's notifications (`/api/live`) refetch the overview, so each
 * host's outcome appears as the worker records it.
 */
export function ConsoleKeyPanel({ initial }: { initial: ConsoleKeyOverviewJson }) {
  const queryClient = useQueryClient();
  const canRotate = useCan("admin");
  const refetchInterval = useFallbackRefetchInterval();
  const [runId, setRunId] = useState(initial.rotation?.runId ?? null);
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [pending, startTransition] = useTransition();

  const { data } = useQuery({
    // Under the rotation run's key: its live notifications invalidate this query.
    queryKey: runId ? [...liveKeys.run(runId), "console-key"] : ["console-key"],
    queryFn: () => fetchJson<ConsoleKeyOverviewJson>("/api/console-key"),
    initialData: initial,
    refetchInterval,
  });
  const overview = data ?? initial;
  const rotation = overview.rotation;
  const rotating =
    rotation !== null && rotation.finishedAt === null && rotation.runStatus === "running";

  const rotate = () =>
    startTransition(async () => {
      setError(null);
      const result = await rotateConsoleKeyAction({});
      if (!result.ok) {
        setError(result.message);
        return;
      }
      setConfirming(false);
      setRunId(result.runId);
      await queryClient.invalidateQueries({ queryKey: liveKeys.run(result.runId) });
    });

  const done = rotation?.hosts.filter((h) => h.outcome !== "pending").length ?? 0;
  const problems = rotation?.hosts.filter(
    (h) => h.outcome === "new_key_refused" || h.outcome === "unreachable",
  );

  return (
    <>
      <section className="panel" aria-labelledby="key-heading">
        <div className="panel-head">
          <h2 id="key-heading">Active key</h2>
        </div>
        <p>
          Fingerprint{" "}
          <span className="mono fingerprint" data-testid="console-key-fingerprint">
            {overview.key.fingerprint}
          </span>
          {" · "}
          {overview.hostCount === 1 ? "1 host uses" : `${overview.hostCount} hosts use`} the
          console&apos;s key
        </p>
        <CopyField
          label="Install command (run once on a host, as its SSH user)"
          value={overview.installCommand}
          rows={4}
          testId="console-key-install-command"
        />
        <CopyField label="Public key" value={overview.key.publicKey} testId="console-key-public" />
        {canRotate && (
          <div className="form-actions">
            <button
              type="button"
              className="button"
              onClick={() => setConfirming(true)}
              disabled={rotating}
              data-testid="rotate-key"
            >
              {rotating ? "Rotation in progress…" : "Rotate key"}
            </button>
          </div>
        )}
      </section>

      {rotation && (
        <section className="panel" aria-labelledby="rotation-heading" data-testid="rotation">
          <div className="panel-head">
            <h2 id="rotation-heading">{rotating ? "Rotation in progress" : "Last rotation"}</h2>
            <span className="muted small">
              started by {rotation.startedBy} at {new Date(rotation.startedAt).toLocaleString()}
              {" · "}
              <a href={`/api/runs/${rotation.runId}/log`} target="_blank" rel="noreferrer">
                commands run (log)
              </a>
            </span>
          </div>
          <p role="status" aria-live="polite" data-testid="rotation-summary">
            {rotating
              ? `${done} of ${rotation.hosts.length} hosts done`
              : rotation.runStatus === "failed"
                ? `Stopped: ${rotation.failureReason ?? "the rotation run failed"}. Hosts not yet switched keep the old key; start a new rotation to finish.`
                : `${done} of ${rotation.hosts.length} hosts done`}
            {" · "}
            <span className="mono">{rotation.fromFingerprint}</span> →{" "}
            <span className="mono">{rotation.toFingerprint}</span>
          </p>
          {problems && problems.length > 0 && (
            <div className="notice notice-warning" data-testid="rotation-problems">
              <p>
                {problems.length === 1 ? "1 host" : `${problems.length} hosts`} kept the old key
                (the console keeps using it for them): {problems.map((h) => h.hostName).join(", ")}.
                Fix the cause shown below, then rotate again.
              </p>
            </div>
          )}
          {rotation.hosts.length === 0 ? (
            <p className="muted">No host used the console&apos;s key.</p>
          ) : (
            <div className="table-scroll">
              <table className={styles.outcomes}>
                <thead>
                  <tr>
                    <th scope="col">Host</th>
                    <th scope="col">Outcome</th>
                    <th scope="col">Detail</th>
                  </tr>
                </thead>
                <tbody>
                  {rotation.hosts.map((host) => (
                    <tr key={host.hostId} data-testid={`rotation-host-${host.hostName}`}>
                      <td className={styles.hostName}>
                        <a href={`/hosts/${host.hostId}`}>{host.hostName}</a>
                      </td>
                      <td
                        className={`${styles.outcome} ${styles[`outcome-${host.outcome}`] ?? ""}`}
                        data-outcome={host.outcome}
                      >
                        {OUTCOME_LABEL[host.outcome]}
                      </td>
                      <td className="small">{host.detail ?? ""}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </section>
      )}

      {overview.history.length > 1 && (
        <section className="panel" aria-labelledby="history-heading">
          <div className="panel-head">
            <h2 id="history-heading">Earlier keys</h2>
          </div>
          <ul className={styles.keyHistory}>
            {overview.history
              .filter((key) => key.id !== overview.key.id)
              .map((key) => (
                <li key={key.id}>
                  <span className="mono">{key.fingerprint}</span> — {key.state}
                  {key.state === "retiring" && " (a host still logs in with it)"}
                </li>
              ))}
          </ul>
        </section>
      )}

      <ConfirmDialog
        open={confirming}
        title="Rotate the console's SSH key?"
        confirmLabel={`Rotate key on ${overview.hostCount} ${overview.hostCount === 1 ? "host" : "hosts"}`}
        pending={pending}
        error={error}
        onConfirm={rotate}
        onCancel={() => {
          setConfirming(false);
          setError(null);
        }}
        testId="rotate-dialog"
      >
        <p>A new key pair is created now; hosts added from now on get the new key.</p>
        <p>
          <strong>
            {overview.hostCount} {overview.hostCount === 1 ? "host" : "hosts"}
          </strong>{" "}
          will get the new key, one by one: it is added to the host&apos;s{" "}
          <span className="mono">~/.ssh/authorized_keys</span>, the console logs in with it, and
          only after that login works is the old key removed from that host.
        </p>
        <p>
          A host that refuses the new key or cannot be reached keeps the old key, which the console
          keeps using for it; it is listed here afterwards.
        </p>
      </ConfirmDialog>
    </>
  );
}
