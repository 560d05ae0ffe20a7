"use client";

import Link from "next/link";
import type { HostState } from "@/lib/hosts/host-state";
import type { HostSummary } from "@/lib/hosts/list-hosts";
import { IfCan } from "./actor-context";
import { shortFingerprint } from "./format";
import { PhaseLine } from "./phase-line";
import { useHosts } from "./queries";
import { StateBadge } from "./state-badge";

const STATES: HostState[] = ["onboarding", "failed", "active"];

/** The hosts list: counts per state, then one row per host with its live phase line. */
export function HostsView({ initialHosts }: { initialHosts: HostSummary[] }) {
  const { data: hosts, error } = useHosts(initialHosts);
  const counts = Object.fromEntries(
    STATES.map((state) => [state, hosts.filter((h) => h.state === state).length]),
  ) as Record<HostState, number>;

  return (
    <>
      <div className="page-head">
        <h1>Hosts</h1>
        <IfCan role="operator">
          <Link href="/hosts/new" className="button button-primary" data-testid="add-host">
            Add host
          </Link>
        </IfCan>
      </div>
      <ul className="counts" aria-label="Hosts per state">
        {STATES.map((state) => (
          <li key={state} className={`count count-${state}`} data-testid={`count-${state}`}>
            <span className="count-number">{counts[state]}</span> {state}
          </li>
        ))}
      </ul>
      {error && (
        <p className="notice notice-warning" role="status">
          Could not refresh the list: {error.message}. Showing the last known state.
        </p>
      )}
      {hosts.length === 0 ? (
        <div className="empty">
          <p>No hosts yet.</p>
          <p>
            <Link href="/hosts/new">Add the first host</Link> — the console takes it from a fresh
            Debian 13 install to an active Proxmox host.
          </p>
        </div>
      ) : (
        <table className="hosts-table" data-testid="hosts-table">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Address</th>
              <th scope="col">State</th>
              <th scope="col">Phase</th>
              <th scope="col">Host key</th>
            </tr>
          </thead>
          <tbody>
            {hosts.map((host) => (
              <tr key={host.id} data-testid={`host-row-${host.name}`}>
                <td>
                  <Link href={`/hosts/${host.id}`} className="host-link">
                    {host.name}
                  </Link>
                </td>
                <td className="mono">
                  {host.address}
                  {host.sshPort !== 22 && `:${host.sshPort}`}
                </td>
                <td>
                  <StateBadge state={host.state} />
                  {(host.templateCheck.state === "missing" ||
                    host.templateCheck.state === "unknown") && (
                    <>
                      {" "}
                      <span
                        className={`badge ${host.templateCheck.state === "missing" ? "badge-failed" : "badge-onboarding"}`}
                        title={host.templateCheck.failure ?? undefined}
                        data-testid={`template-check-${host.name}`}
                      >
                        {host.templateCheck.state === "missing"
                          ? "templates missing"
                          : "templates: could not check"}
                      </span>
                    </>
                  )}
                </td>
                <td>
                  <PhaseLine run={host.run} testId={`phase-line-${host.name}`} />
                </td>
                <td className="mono">
                  {host.hostKeySha256 ? (
                    <span title={host.hostKeySha256} data-testid="host-key-short">
                      {shortFingerprint(host.hostKeySha256)}
                    </span>
                  ) : (
                    <span className="muted">not pinned yet</span>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}
