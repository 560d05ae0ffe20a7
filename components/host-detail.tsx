"use client";

import Link from "next/link";
import type { HostDetail } from "@/lib/hosts/get-host";
import type { PowerControllerView } from "@/lib/power-controllers/schemas";
import { DECOMMISSION_HOST } from "@/lib/steps/onboarding/decommission/name";
import { formatDateTime } from "./format";
import type { HostFormConsoleKey } from "./host-form";
import { DecommissionResults, HostLifecycle } from "./host-lifecycle";
import { HostRuns } from "./host-runs";
import { PhaseLine } from "./phase-line";
import { PowerControllerPanel } from "./power-controller-panel";
import { useHost } from "./queries";
import { ReonboardControl } from "./reonboard-control";
import { RunControls } from "./run-controls";
import { LogViewer } from "./log-viewer/log-viewer";
import { RunEvents } from "./run-log";
import { StateBadge } from "./state-badge";
import { StepTimeline } from "./step-timeline";

/**
 * A certificate fingerprint (`AB:CD:…`, 32 bytes) short enough to read at a glance:
 * `AB:CD:EF:01…9A:BC`. The full value is in the element's title.
 */
function shortCertFingerprint(fingerprint: string): string {
  const bytes = fingerprint.split(":");
  return bytes.length > 8
    ? `${bytes.slice(0, 4).join(":")}…${bytes.slice(-2).join(":")}`
    : fingerprint;
}

/** One host: identity and pinned key, live phase line, step timeline, controls, events, log. */
export function HostDetailView({
  initialHost,
  consoleKey = null,
  viewedRun = null,
  powerController = null,
  clusterName = null,
}: {
  initialHost: HostDetail;
  /** An earlier run chosen in the history (`?run=`); null shows the latest, live. */
  viewedRun?: HostDetail["latestRun"];
  /** For the edit form's "the console's key" option; null for roles that cannot edit. */
  consoleKey?: HostFormConsoleKey | null;
  /** The host's out-of-band power controller (lib/power-controllers), never its password. */
  powerController?: PowerControllerView | null;
  /** The Proxmox cluster the host is a member of (the power controller form offers WoL through it). */
  clusterName?: string | null;
}) {
  const { data: host, error } = useHost(initialHost.id, initialHost);
  const run = viewedRun ?? host.latestRun;
  const decommissionRun = run?.pipeline === DECOMMISSION_HOST;

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
        {/* The one reason on the first screen (a phone's too), not only in the run card below. */}
        {host.latestRun?.status === "failed" && (
          <p className="host-reason">
            <PhaseLine run={host.latestRun} testId="host-header-reason" />
          </p>
        )}
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
              {host.sshUser} (
              {host.authMethod === "password"
                ? "password"
                : host.authMethod === "console_key"
                  ? "the console's key"
                  : "private key"}
              )
            </dd>
          </div>
          <div>
            <dt>Node name</dt>
            <dd className="mono" data-testid="host-node-name">
              {host.proxmox.nodeName ?? <span className="muted">not verified yet</span>}
            </dd>
          </div>
          <div>
            <dt>Cluster</dt>
            <dd data-testid="host-cluster">
              {!host.proxmox.cluster || host.proxmox.cluster.mode === "none" ? (
                <span className="muted">standalone</span>
              ) : host.proxmox.cluster.mode === "create" ? (
                <>
                  <span className="mono">{host.proxmox.cluster.name}</span> (created by this host)
                </>
              ) : host.proxmox.cluster.name ? (
                <>
                  <span className="mono">{host.proxmox.cluster.name}</span> (joined)
                </>
              ) : (
                <span className="muted">joins a cluster during onboarding</span>
              )}
            </dd>
          </div>
          <div>
            <dt>Subscription</dt>
            <dd data-testid="host-subscription">
              {host.proxmox.hasSubscriptionKey ? (
                "key stored (sealed): the enterprise repository once it is active"
              ) : (
                <span className="muted">none: no-subscription repository</span>
              )}
            </dd>
          </div>
          <div>
            <dt>Proxmox API</dt>
            <dd className="mono" data-testid="host-api-port">
              port {host.proxmox.apiPort}
            </dd>
          </div>
          <div>
            <dt>API certificate</dt>
            <dd data-testid="host-api-cert">
              {host.proxmox.apiCertSha256 ? (
                <span className="mono" title={`SHA-256 ${host.proxmox.apiCertSha256}`}>
                  {shortCertFingerprint(host.proxmox.apiCertSha256)}
                </span>
              ) : (
                <span className="muted">not pinned yet</span>
              )}
            </dd>
          </div>
          <div>
            <dt>API token</dt>
            <dd className="mono" data-testid="host-api-token">
              {host.proxmox.apiTokenId ?? <span className="muted">not created yet</span>}
            </dd>
          </div>
          <div>
            <dt>Capacity</dt>
            <dd data-testid="host-capacity">
              {host.capacity ? (
                <>
                  <span data-testid="host-capacity-cores">{host.capacity.cores}</span> cores ·{" "}
                  <span data-testid="host-capacity-memory" title={`${host.capacity.memoryMib} MiB`}>
                    {(host.capacity.memoryMib / 1024).toFixed(1)}
                  </span>{" "}
                  GiB memory ·{" "}
                  <span data-testid="host-capacity-images">{host.capacity.imageStorageGib}</span>{" "}
                  GiB for disk images
                </>
              ) : (
                <span className="muted">not registered yet</span>
              )}
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

      <HostLifecycle host={host} consoleKey={consoleKey} />

      {host.state !== "retired" && (
        <PowerControllerPanel
          whose={{ kind: "host", hostId: host.id, clusterName: clusterName ?? null }}
          initial={powerController}
        />
      )}

      {viewedRun && (
        <p className="notice notice-warning" role="status" data-testid="earlier-run-notice">
          Showing an earlier run of {host.name}, started{" "}
          <time dateTime={viewedRun.createdAt} suppressHydrationWarning>
            {formatDateTime(viewedRun.createdAt)}
          </time>
          . <Link href={`/hosts/${host.id}`}>Show the latest run</Link>
        </p>
      )}

      {!run ? (
        <p className="muted">This host has no onboarding run.</p>
      ) : (
        <>
          <section className="panel" aria-labelledby="run-heading">
            <div className="panel-head">
              <h2 id="run-heading">{decommissionRun ? "Decommission" : "Onboarding"}</h2>
              {/* Retry and Abort act on the latest run only; an earlier one is history. */}
              {!viewedRun && (
                <div style={{ display: "flex", gap: "0.75rem", alignItems: "flex-start" }}>
                  <RunControls hostId={host.id} hostName={host.name} run={run} />
                  {(host.state === "active" ||
                    host.state === "failed" ||
                    host.state === "aborted") && (
                    <ReonboardControl hostId={host.id} hostName={host.name} />
                  )}
                </div>
              )}
            </div>
            <div className="phase">
              <PhaseLine run={run} testId={`phase-line-${host.name}`} withOutput />
            </div>
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
            {decommissionRun ? (
              <DecommissionResults run={run} />
            ) : (
              <StepTimeline steps={run.timeline} phase={run.phase} failureReasons={false} />
            )}
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
      <HostRuns hostId={host.id} runs={host.runs} shownRunId={run?.id ?? null} />
    </>
  );
}
