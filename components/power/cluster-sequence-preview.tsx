import type { ClusterSequencePlan } from "@/lib/power/clusters/sequence-plan";
import { describeThresholds } from "@/lib/power/consolidate/describe";
import { formatElapsed } from "../format";
import { ConsolidateCheckView } from "./consolidate-panel";

const ROLE_TEXT = { plain: "", monitor: ", Ceph monitor", console: ", runs the console: last" };

/**
 * One cluster's sequence in the plan preview: its steps with what each may take, the node order,
 * and what an operator must know (nodes left up, what consolidating did or will do).
 */
export function ClusterSequencePreview({ cluster }: { cluster: ClusterSequencePlan }) {
  const stage = cluster.consolidate;
  return (
    <div data-testid={`plan-cluster-${cluster.name}`}>
      <strong>Cluster {cluster.name}</strong>{" "}
      <span className="muted small">
        {stage?.stage === "first" ? "first stage of consolidating" : "as one unit"}
        {cluster.hyperConverged && ", hyper-converged Ceph"}, up to{" "}
        {formatElapsed(cluster.budgetSeconds)}
      </span>
      {stage && (
        <div className="small" data-testid={`plan-consolidate-${cluster.name}`}>
          <p>
            Consolidates: at the first of {describeThresholds(stage.firstThreshold)} the guests of{" "}
            {stage.leaving.join(", ") || "no node"}{" "}
            {stage.mode === "migrate"
              ? `move to ${stage.remainingNode ?? "? (no node stays)"}`
              : `stop (${stage.remainingNode ?? "no node"} stays up)`}{" "}
            and those nodes go down; this plan is the final stage, when the trigger fires.
            {stage.downAtFirst.length > 0 &&
              ` Down since the first threshold of this outage: ${stage.downAtFirst.join(", ")}.`}
          </p>
          <ConsolidateCheckView check={stage.lastCheck} />
        </div>
      )}
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
