"use client";

import { useQueryClient } from "@tanstack/react-query";
import { useRouter } from "next/navigation";
import { useState, useTransition } from "react";
import { clearHostPinAction } from "@/lib/actions/clear-host-pin";
import { decommissionHostAction } from "@/lib/actions/decommission-host";
import { deleteHostAction } from "@/lib/actions/delete-host";
import type { HostDetail } from "@/lib/hosts/get-host";
import { useCan } from "./actor-context";
import { ConfirmDialog } from "./confirm-dialog";
import { decommissionPlan } from "./decommission-plan";
import { EditHostForm } from "./edit-host-form";
import type { HostFormConsoleKey } from "./host-form";
import { liveKeys } from "./live-keys";

type Dialog = "clear-pin" | "decommission" | "delete" | null;

/**
 * The host's life after onboarding: edit its connection (tested before saving), clear its
 * host key pin, decommission it, and — once retired — delete it (admins). Destructive steps
 * sit behind a confirmation that says exactly what will happen. Buttons a role cannot use are
 * hidden; the server checks the role again.
 */
export function HostLifecycle({
  host,
  consoleKey,
}: {
  host: HostDetail;
  consoleKey: HostFormConsoleKey | null;
}) {
  const router = useRouter();
  const queryClient = useQueryClient();
  const canOperate = useCan("operator");
  const canAdmin = useCan("admin");
  const [editing, setEditing] = useState(false);
  const [dialog, setDialog] = useState<Dialog>(null);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [pending, startTransition] = useTransition();

  if (!canOperate) return null;
  const retired = host.state === "retired";
  const running = host.latestRun?.status === "running";
  const decommissioning = host.state === "decommissioning";

  const refresh = () =>
    Promise.all([
      queryClient.invalidateQueries({ queryKey: liveKeys.host(host.id) }),
      queryClient.invalidateQueries({ queryKey: liveKeys.hosts }),
    ]);
  const act = (work: () => Promise<{ ok: true } | { ok: false; message: string }>, done: string) =>
    startTransition(async () => {
      setError(null);
      const result = await work();
      if (!result.ok) {
        setError(result.message);
        return;
      }
      setDialog(null);
      setNotice(done);
      await refresh();
    });
  const open = (next: Dialog) => {
    setError(null);
    setNotice(null);
    setDialog(next);
  };

  return (
    <section className="panel" aria-labelledby="lifecycle-heading" data-testid="host-lifecycle">
      <h2 id="lifecycle-heading">Connection and lifecycle</h2>
      {retired ? (
        <p className="muted">
          Retired{" "}
          {host.retiredAt && (
            <time dateTime={host.retiredAt} suppressHydrationWarning>
              {new Date(host.retiredAt).toLocaleString()}
            </time>
          )}
          : no new runs, no template checks. Its history below stays readable.
        </p>
      ) : running ? (
        <p className="muted small">
          Editing and clearing the pin wait until the current run has ended (or is aborted).
        </p>
      ) : null}
      <div className="lifecycle-actions">
        {!retired && !running && (
          <button
            type="button"
            className="button"
            aria-expanded={editing}
            onClick={() => {
              setNotice(null);
              setEditing((value) => !value);
            }}
            data-testid="edit-host-button"
          >
            {editing ? "Close the editor" : "Edit connection"}
          </button>
        )}
        {!retired && !running && host.hostKeySha256 && (
          <button
            type="button"
            className="button"
            onClick={() => open("clear-pin")}
            data-testid="clear-pin-button"
          >
            Clear pin
          </button>
        )}
        {!retired && !decommissioning && (
          <button
            type="button"
            className="button button-danger"
            onClick={() => open("decommission")}
            data-testid="decommission-button"
          >
            Decommission
          </button>
        )}
        {retired && canAdmin && (
          <button
            type="button"
            className="button button-danger"
            onClick={() => open("delete")}
            data-testid="delete-host-button"
          >
            Delete host
          </button>
        )}
      </div>
      {notice && (
        <p className="notice notice-ok" role="status" data-testid="lifecycle-notice">
          {notice}
        </p>
      )}
      {error && !dialog && (
        <p className="notice notice-error" role="alert" data-testid="lifecycle-error">
          {error}
        </p>
      )}
      {editing && !retired && !running && (
        <EditHostForm
          host={host}
          consoleKey={consoleKey}
          onDone={(message) => {
            setEditing(false);
            setNotice(message);
          }}
        />
      )}

      <ConfirmDialog
        open={dialog === "clear-pin"}
        title={`Clear the host key pin of ${host.name}?`}
        confirmLabel="Clear pin"
        pending={pending}
        error={dialog === "clear-pin" ? error : null}
        onConfirm={() =>
          act(
            () => clearHostPinAction({ hostId: host.id, fingerprint: host.hostKeySha256 ?? "" }),
            "Pin cleared. The next connection (saving the connection settings, or a re-onboard) pins the key the host presents.",
          )
        }
        onCancel={() => setDialog(null)}
        testId="clear-pin-dialog"
      >
        <p>The console trusts this SSH host key for {host.name}:</p>
        <p className="mono fingerprint" data-testid="clear-pin-fingerprint">
          {host.hostKeySha256}
        </p>
        <p>
          A host that presents a different key was either <strong>reinstalled</strong> (or had its
          SSH host keys regenerated) — or <strong>someone is in the middle</strong> of the
          connection, reading what the console sends. Clear the pin only if you know it was
          reinstalled.
        </p>
        <p>
          After clearing, the next connection will trust{" "}
          <strong>whatever key the host presents</strong> and pin it: the connection test when you
          save the connection settings, or a re-onboard.
        </p>
      </ConfirmDialog>

      <ConfirmDialog
        open={dialog === "decommission"}
        title={`Decommission ${host.name}?`}
        confirmLabel={`Decommission ${host.name}`}
        pending={pending}
        error={dialog === "decommission" ? error : null}
        onConfirm={() =>
          act(
            () => decommissionHostAction({ hostId: host.id }),
            "Decommissioning started; each step's result appears below as it happens.",
          )
        }
        onCancel={() => setDialog(null)}
        testId="decommission-dialog"
      >
        <p>In this order:</p>
        <ol data-testid="decommission-plan">
          {decommissionPlan(host).map((line) => (
            <li key={line}>{line}</li>
          ))}
        </ol>
        <p>
          Best effort: a step that cannot reach the host says what it left behind (and how to remove
          it by hand), and the decommission goes on. It cannot be undone.
        </p>
      </ConfirmDialog>

      <ConfirmDialog
        open={dialog === "delete"}
        title={`Delete ${host.name} for good?`}
        confirmLabel={`Delete ${host.name}`}
        pending={pending}
        error={dialog === "delete" ? error : null}
        onConfirm={() =>
          startTransition(async () => {
            setError(null);
            const result = await deleteHostAction({ hostId: host.id });
            if (!result.ok) {
              setError(result.message);
              return;
            }
            await queryClient.invalidateQueries({ queryKey: liveKeys.hosts });
            router.push("/hosts");
          })
        }
        onCancel={() => setDialog(null)}
        testId="delete-host-dialog"
      >
        <p>
          Deletes {host.name} ({host.address}) from the console: the host, all its runs with their
          logs and events, and what is left of its credentials. The audit log keeps a record of the
          deletion. Nothing is done on the machine itself.
        </p>
      </ConfirmDialog>
    </section>
  );
}

/** Each decommission step's result, live: what was removed, and what was NOT (and why). */
export function DecommissionResults({ run }: { run: NonNullable<HostDetail["latestRun"]> }) {
  return (
    <ol className="decommission-results" data-testid="decommission-results">
      {run.timeline.map((step) => {
        const detail =
          step.state === "failed"
            ? step.failureReason
            : step.state === "done"
              ? step.lastDetail
              : null;
        const notDone = detail !== null && /NOT removed|could not|failed/.test(detail);
        return (
          <li
            key={step.name}
            data-testid={`decommission-result-${step.name}`}
            data-state={step.state}
          >
            <span aria-hidden="true">
              {step.state === "done"
                ? notDone
                  ? "⚠"
                  : "✓"
                : step.state === "failed"
                  ? "✕"
                  : step.state === "running"
                    ? "◐"
                    : "·"}
            </span>
            <span className="mono">{step.name}</span>
            <span className={notDone ? "not-done" : undefined}>
              {detail ?? (step.state === "running" ? (run.phase ?? "working…") : "waiting")}
            </span>
          </li>
        );
      })}
    </ol>
  );
}
