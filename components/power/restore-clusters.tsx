import { RestoreClusterButton } from "./restore-cluster-button";

/** The power page's "after power returns" section: one restore per known cluster. */
export function RestoreClusters({
  clusters,
}: {
  clusters: { id: string; label: string; hyperConverged: boolean }[];
}) {
  if (clusters.length === 0) return null;
  return (
    <section data-testid="restore-clusters">
      <h2>After power returns</h2>
      <p className="muted small">
        A cluster shutdown disarms HA and sets Ceph flags; they stay that way until restored here.
      </p>
      {clusters.map((cluster) => (
        <RestoreClusterButton
          key={cluster.id}
          clusterId={cluster.id}
          clusterName={cluster.label}
          hyperConverged={cluster.hyperConverged}
        />
      ))}
    </section>
  );
}
