import type { ClusterSequencePlan } from "@/lib/power/cluster-sequence/plan";
import { formatElapsed } from "../format";

const ROLE_TEXT = { plain: "", monitor: ", Ceph monitor", console: ", runs the console: last" };

/**
 * One cluster's sequence in the plan preview: its steps with what each may take, the node order,
 * and what an operator must know (nodes left up, consolidate not built).
 */
export function ClusterSequencePreview({ cluster }: { cluster: ClusterSequencePlan }) {
  return (
    <div data-testid={`plan-cluster-${cluster.name}`}>
      <strong>Cluster {cluster.name}</strong>{" "}
      <span className="muted small">
        as one unit{cluster.hyperConverged && ", hyper-converged Ceph"}, up to{" "}
        {formatElapsed(cluster.budgetSeconds)}
      </span>
      <ol className="small">
        {cluster.steps.map((step) => (
          <li key={step.step}>
            {step.what} <span className="muted">(up to {formatElapsed(step.seconds)})</span>
          </li>
        ))}
      </ol>
      <p className="small">
        Nodes in order:{" "}
        {cluster.nodes.map((node) => `${node.name}${ROLE_TEXT[node.role]}`).join(" → ") || "none"}
      </p>
      {cluster.warnings.map((warning) => (
        <p key={warning} className="small notice-error">
          {warning}
        </p>
      ))}
    </div>
  );
}
