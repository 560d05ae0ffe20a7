"use client";

import { LocalTime } from "../local-time";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useState, useTransition } from "react";
import { refreshClustersAction } from "@/lib/actions/power/refresh-clusters";
import { setClusterPolicyAction } from "@/lib/actions/power/set-cluster-policy";
import type { ClusterGroupView, LooseHosts } from "@/lib/power/clusters/cluster-groups-view";
import type { ClusterPolicy } from "@/lib/power/clusters/load-cluster-groups";
import { CONSOLIDATE_ON_CEPH } from "@/lib/power/clusters/schemas";
import { useCan } from "../actor-context";
import { ConsolidatePanel } from "./consolidate-panel";
import { formatDateTime } from "../format";
import { useFallbackRefetchInterval } from "../live-provider";
import { fetchJson } from "../queries";
import { powerKeys } from "./power-keys";
import styles from "./power.module.css";

const POLICY_LABEL: Record<ClusterPolicy, string> = {
  cluster: "Cluster: only what lost power",
  "whole-cluster": "Whole cluster, always",
  "per-host": "Per host",
  consolidate: "Consolidate",
};

const yesNo = (value: boolean | null, yes: string, no: string) =>
  value === null ? "? not known" : value ? yes : no;

/** Where the last refresh stands: when the cluster last answered, or why it could not be asked. */
function Freshness({ group }: { group: ClusterGroupView }) {
  const at = group.refreshedAt ? formatDateTime(group.refreshedAt) : "never";
  if (group.refreshError) {
    return (
      <p
        className="small notice-error"
        data-testid="cluster-refresh-error"
        suppressHydrationWarning
      >
        {group.refreshError}; last known at {at}
      </p>
    );
  }
  return (
    <p className="muted small" suppressHydrationWarning>
      Last asked {at}
    </p>
  );
}

function PolicySelect({ group }: { group: ClusterGroupView }) {
  const canSet = useCan("admin");
  const queryClient = useQueryClient();
  const [error, setError] = useState<string | null>(null);
  const [pending, startTransition] = useTransition();
  const change = (policy: string) =>
    startTransition(async () => {
      setError(null);
      const result = await setClusterPolicyAction({ id: group.id, policy });
      if (!result.ok) setError(result.fieldErrors.policy?.join(" ") ?? result.message);
      await queryClient.invalidateQueries({ queryKey: powerKeys.clusters });
    });
  const id = `policy-${group.id}`;
  return (
    <div>
      <label htmlFor={id}>Goes down</label>{" "}
      <select
        id={id}
        value={group.chosenPolicy}
        disabled={!canSet || pending}
        onChange={(event) => change(event.target.value)}
        aria-describedby={`${id}-why`}
        data-testid={`cluster-policy-${group.label}`}
      >
        {(Object.keys(POLICY_LABEL) as ClusterPolicy[]).map((policy) => (
          <option
            key={policy}
            value={policy}
            disabled={policy === "consolidate" && group.hyperConverged}
          >
            {POLICY_LABEL[policy]}
            {policy === "consolidate" && group.hyperConverged ? " (not offered on Ceph)" : ""}
          </option>
        ))}
      </select>
      {group.hyperConverged && (
        <p id={`${id}-why`} className="muted small" data-testid="consolidate-why">
          Consolidate: {CONSOLIDATE_ON_CEPH}
        </p>
      )}
      {group.policyNote && (
        <p className="small notice-warning" data-testid="cluster-policy-note">
          In effect: cluster as one unit — {group.policyNote}.
        </p>
      )}
      {!canSet && <p className="muted small">Only an admin changes the policy.</p>}
      {error && (
        <p role="alert" className="small notice-error" data-testid="cluster-policy-error">
          {error}
        </p>
      )}
    </div>
  );
}

const MEMBERSHIP_TEXT = {
  confirmed: "✓ its hosts are one cluster: their certificates say so",
  single: "one onboarded host answers for it",
  ambiguous: "? the console cannot tell which hosts are this cluster's",
} as const;

/**
 * How the console knows which hosts are this cluster's: clusters are told apart by their
 * certificates, never by the name (two sites may share it). An ambiguity is said first, with
 * what the shutdown does about it.
 */
function Membership({ group }: { group: ClusterGroupView }) {
  const membership = group.membership;
  if (!membership) {
    return (
      <p className="muted small" data-testid="cluster-membership" data-verdict="none">
        Which hosts are this cluster&apos;s is judged at the next refresh.
      </p>
    );
  }
  const apart = membership.sameName.filter((s) => s.kind === "apart");
  return (
    <div className="small" data-testid="cluster-membership" data-verdict={membership.verdict}>
      {group.ambiguity && (
        <div className="notice notice-error" role="alert" data-testid="cluster-ambiguous">
          <p>
            <strong>Ambiguous:</strong> {group.ambiguity}.
          </p>
          <p>
            So it goes down fail-safe: as one unit through its own hosts — HA disarmed and every
            guest stopped before any node of any cluster goes down — and the nodes of every cluster
            in one order. Make each node&apos;s certificate readable and its own (the findings below
            say what is missing), then Refresh.
          </p>
        </div>
      )}
      {apart.map((other) => (
        <p key={other.clusterId} data-testid="cluster-apart">
          Another cluster is also named {group.name} ({other.hosts.join(", ")}): a different cluster
          — {other.why}.
        </p>
      ))}
      <details>
        <summary>{MEMBERSHIP_TEXT[membership.verdict]}</summary>
        <ul>
          {membership.findings.map((line) => (
            <li key={line}>{line}</li>
          ))}
        </ul>
      </details>
    </div>
  );
}

function ClusterCard({ group }: { group: ClusterGroupView }) {
  return (
    <section
      className="panel"
      aria-labelledby={`cluster-${group.id}`}
      data-testid={`cluster-${group.label}`}
      data-cluster-id={group.id}
    >
      <h2 id={`cluster-${group.id}`}>{group.label}</h2>
      <p>
        {yesNo(group.quorate, "✓ quorate", "✕ no quorum")}
        {" · "}
        {group.hyperConverged ? "hyper-converged Ceph" : "no Ceph"}
        {" · "}
        {group.nodes.length} nodes
      </p>
      <Freshness group={group} />
      <Membership group={group} />
      <PolicySelect group={group} />
      {/* Also on a cluster that became hyper-converged since: its check says why it cannot. */}
      {group.chosenPolicy === "consolidate" && <ConsolidatePanel group={group} />}
      <div className="table-scroll">
        <table className={styles.table} data-testid={`cluster-nodes-${group.label}`}>
          <thead>
            <tr>
              <th scope="col">Node</th>
              <th scope="col">Online</th>
              <th scope="col">Ceph monitor</th>
              <th scope="col">Protected by the console</th>
            </tr>
          </thead>
          <tbody>
            {group.nodes.map((node) => (
              <tr key={node.name} data-testid={`cluster-node-${node.name}`}>
                <th scope="row">
                  {node.name}
                  {node.ip && <div className="muted small mono">{node.ip}</div>}
                  {node.hostId ? (
                    <div className="small">
                      host <Link href={`/hosts/${node.hostId}`}>{node.hostName}</Link>
                    </div>
                  ) : (
                    <div className="muted small">not onboarded in this console</div>
                  )}
                  {node.askError && (
                    <div className="small notice-error">could not ask: {node.askError}</div>
                  )}
                </th>
                <td>{yesNo(node.online, "✓ online", "✕ offline")}</td>
                <td>{node.cephMon ? "✓ monitor" : "—"}</td>
                <td>
                  {node.protected ? "✓ yes" : node.hostId ? "✕ not protected" : "✕ unknown host"}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

type ClustersAnswer = { clusters: ClusterGroupView[] } & LooseHosts;

/** Hosts in no cluster: standalone as they said, or not known because they never answered. */
function LooseHostList({ loose }: { loose: LooseHosts }) {
  if (loose.standalone.length === 0 && loose.unknown.length === 0) return null;
  return (
    <section className="panel" aria-labelledby="loose-hosts-heading">
      <h2 id="loose-hosts-heading">Hosts in no cluster</h2>
      <ul>
        {loose.standalone.map((host) => (
          <li key={host.hostId} data-testid={`standalone-${host.name}`}>
            <Link href={`/hosts/${host.hostId}`}>{host.name}</Link>: standalone (said so at{" "}
            <LocalTime iso={host.checkedAt} />)
            {host.askError && (
              <span className="small notice-error"> — could not ask since: {host.askError}</span>
            )}
          </li>
        ))}
        {loose.unknown.map((host) => (
          <li key={host.hostId} data-testid={`membership-unknown-${host.name}`}>
            <Link href={`/hosts/${host.hostId}`}>{host.name}</Link>: membership not known —{" "}
            <span className="notice-error">could not ask: {host.askError ?? "not asked yet"}</span>
          </li>
        ))}
      </ul>
    </section>
  );
}

/** The clusters the onboarded hosts form, live: membership, quorum, Ceph monitors, policy. */
export function ClusterGroups({ initial }: { initial: ClustersAnswer }) {
  const canRefresh = useCan("operator");
  const refetchInterval = useFallbackRefetchInterval();
  const [message, setMessage] = useState<string | null>(null);
  const [pending, startTransition] = useTransition();
  const { data } = useQuery({
    queryKey: powerKeys.clusters,
    queryFn: () => fetchJson<ClustersAnswer>("/api/power/clusters"),
    initialData: initial,
    refetchInterval,
  });
  const refresh = () =>
    startTransition(async () => {
      const result = await refreshClustersAction({});
      setMessage(
        result.ok ? "Asking every host now; the page updates when they answered." : result.message,
      );
    });
  return (
    <>
      {canRefresh && (
        <p className={styles.inlineActions}>
          <button
            type="button"
            className="button"
            onClick={refresh}
            disabled={pending}
            data-testid="clusters-refresh"
          >
            Refresh
          </button>
          {message && (
            <span className="muted small" role="status">
              {message}
            </span>
          )}
        </p>
      )}
      {data.clusters.length === 0 ? (
        <p className="muted" data-testid="clusters-none">
          No onboarded host reports a cluster: each host goes down on its own.
        </p>
      ) : (
        data.clusters.map((group) => <ClusterCard key={group.id} group={group} />)
      )}
      <LooseHostList loose={data} />
    </>
  );
}
