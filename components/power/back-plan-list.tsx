import type { BackPlanView } from "@/lib/power/power-back/back-plan-view";
import { CONTROLLER_WORDS } from "./controller-words";
import styles from "./timeline.module.css";

/**
 * A way back's plan as an operator reads it before it runs: the hosts in power-on order with
 * their controller (or that they will not come back on their own), the clusters whose quorum is
 * awaited and whose Ceph flags and HA are restored, and the guests in start order with their
 * up-delays. `dry`: every line says "would".
 */
export function BackPlanList({
  plan,
  dry,
  testId,
}: {
  plan: BackPlanView;
  dry: boolean;
  testId: string;
}) {
  const would = (verb: string) => (dry ? `would ${verb}` : verb);
  return (
    <div data-testid={testId} data-mode={dry ? "dry-run" : "armed"}>
      <h4 className={styles.planHeading}>Power on, in this order</h4>
      {plan.hosts.length === 0 ? (
        <p className="muted">No host would go down: nothing to power on.</p>
      ) : (
        <ol data-testid={`${testId}-hosts`}>
          {plan.hosts.map((h) => (
            <li
              key={h.targetId}
              data-testid={`${testId}-host`}
              data-controller={h.controller ?? ""}
            >
              <strong>{h.name}</strong>
              {h.monitor && " (Ceph monitor)"}
              {h.kind === "pbs" && " (backup server)"}:{" "}
              {h.controller ? (
                `${would("power on")} by ${CONTROLLER_WORDS[h.controller]}`
              ) : (
                <span className="field-error">
                  no power controller — will not come back on its own
                </span>
              )}
            </li>
          ))}
        </ol>
      )}
      {plan.clusters.length > 0 && (
        <>
          <h4 className={styles.planHeading}>Clusters</h4>
          <ul data-testid={`${testId}-clusters`}>
            {plan.clusters.map((c) => (
              <li key={c.name}>
                <strong>{c.name}</strong>: {would("wait for")} quorum of {c.nodes.length} node(s)
                {c.cephFlags.length > 0 &&
                  `; once no placement group is down, ${would("clear")} ${c.cephFlags.join(", ")}`}
                {c.haDisarmed && `; ${would("re-arm")} HA`}
              </li>
            ))}
          </ul>
        </>
      )}
      <h4 className={styles.planHeading}>Guests, in start order</h4>
      {plan.guests.length === 0 ? (
        <p className="muted">No guest recorded running: none is started.</p>
      ) : (
        <ol data-testid={`${testId}-guests`}>
          {plan.guests.map((g) => (
            <li key={g.vmid} data-testid={`${testId}-guest`}>
              {g.type} {g.vmid}
              {g.name && ` (${g.name})`} on {g.node}
              <span className="muted small">
                {" "}
                — {g.order === null ? "no order" : `order ${g.order}`}
                {g.upSeconds ? `, then ${g.upSeconds} s before the next` : ""}
                {g.haManaged ? ", HA" : ""}
              </span>
            </li>
          ))}
        </ol>
      )}
      {plan.unknown.length > 0 && (
        <p className="field-error">
          {plan.unknown.map((u) => `${u.node}: ${u.why}`).join("; ")} — what ran there is unknown:
          nothing is started there.
        </p>
      )}
    </div>
  );
}
