import type { PowerBackPageView } from "@/lib/power/queries/power-back-run";
import { BringBackButton } from "./bring-back-button";
import { RestoreClusterButton } from "./restore-cluster-button";

/**
 * The power page's "after power returns" section (admins): Bring back now, and one restore per
 * known cluster.
 */
export function RestoreClusters({
  clusters,
  admin,
  powerBack,
}: {
  clusters: { id: string; label: string; hyperConverged: boolean }[];
  admin: boolean;
  powerBack: PowerBackPageView;
}) {
  if (!admin) return null;
  return (
    <section data-testid="restore-clusters">
      <h2>After power returns</h2>
      <BringBackButton initial={powerBack} />
      {clusters.length > 0 && (
        <p className="muted small">
          A cluster shutdown disarms HA and sets Ceph flags; the way back restores them, or restore
          them here.
        </p>
      )}
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
