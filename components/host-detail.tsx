"use client";

import Link from "next/link";
import type { HostDetail } from "@/lib/hosts/get-host";
import { formatDateTime } from "./format";
import { PhaseLine } from "./phase-line";
import { useHost } from "./queries";
import { RunControls } from "./run-controls";
import { LogViewer } from "./log-viewer/log-viewer";
import { RunEvents } from "./run-log";
import { StateBadge } from "./state-badge";
import { StepTimeline } from "./step-timeline";

/** One host: identity and pinned key, live phase line, step timeline, controls, events, log. */
export function HostDetailView({ initialHost }: { initialHost: HostDetail }) {
  const { data: host, error } = useHost(initialHost.id, initialHost);
  const run = host.latestRun;

  return (
    <>
      <p className="breadcrumb">
        <Link href="/hosts">← Hosts</Link>
      </p>
      <header className="host-header">
        <div className="host-title">
          <h1 data-testid="host-name">{host.name}</h1>
          <StateBadge state={host.state} />
        </div>
        <dl className="host-facts">
          <div>
            <dt>Address</dt>
            <dd className="mono" data-testid="host-address">
              {host.address}:{host.sshPort}
            </dd>
          </div>
          <div>
            <dt>SSH user</dt>
            <dd className="mono" data-testid="host-ssh-user">
              {host.sshUser} ({host.authMethod === "password" ? "password" : "private key"})
            </dd>
          </div>
          <div className="fact-wide">
            <dt>Template check</dt>
            <dd data-testid="host-template-check">
              {host.templateCheck.state === "unchecked" ? (
                <span className="muted">
                  not checked yet — checked every 15 minutes once active
                </span>
              ) : (
                <p
                  className={
                    host.templateCheck.state === "ok"
                      ? undefined
                      : `notice ${host.templateCheck.state === "missing" ? "notice-error" : "notice-warning"}`
                  }
                >
                  {host.templateCheck.failure ?? "every template the catalog requires is present"}
                  {host.templateCheck.checkedAt && (
                    <span className="muted small">
                      {" · checked "}
                      <time dateTime={host.templateCheck.checkedAt} suppressHydrationWarning>
                        {formatDateTime(host.templateCheck.checkedAt)}
                      </time>
                    </span>
                  )}
                </p>
              )}
            </dd>
          </div>
          <div className="fact-wide">
            <dt>Pinned host key</dt>
            <dd data-testid="host-key-fingerprint">
              {host.hostKeySha256 ? (
                <span className="mono fingerprint">{host.hostKeySha256}</span>
              ) : (
                <span className="muted">not pinned yet — pinned on first contact</span>
              )}
            </dd>
          </div>
        </dl>
      </header>

      {error && (
        <p className="notice notice-warning" role="status">
          Could not refresh this host: {error.message}. Showing the last known state.
        </p>
      )}

      {!run ? (
        <p className="muted">This host has no onboarding run.</p>
      ) : (
        <>
          <section className="panel" aria-labelledby="run-heading">
            <div className="panel-head">
              <h2 id="run-heading">Onboarding</h2>
              <RunControls hostId={host.id} hostName={host.name} run={run} />
            </div>
            <p className="phase">
              <PhaseLine run={run} testId={`phase-line-${host.name}`} />
            </p>
            <p className="muted small">
              Started{" "}
              <time dateTime={run.createdAt} suppressHydrationWarning>
                {formatDateTime(run.createdAt)}
              </time>
              {run.finishedAt && (
                <>
                  {" · finished "}
                  <time dateTime={run.finishedAt} suppressHydrationWarning>
                    {formatDateTime(run.finishedAt)}
                  </time>
                </>
              )}
            </p>
            <StepTimeline steps={run.timeline} phase={run.phase} />
          </section>

          <section className="panel" aria-labelledby="events-heading">
            <h2 id="events-heading">Recent events</h2>
            <RunEvents events={run.events} />
          </section>

          <section className="panel" aria-labelledby="log-heading">
            <h2 id="log-heading">Build log</h2>
            <LogViewer key={run.id} run={run} />
          </section>
        </>
      )}
    </>
  );
}
