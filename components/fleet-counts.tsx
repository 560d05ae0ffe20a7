"use client";

import { HOST_STATES } from "@/lib/hosts/fleet-schemas";
import type { HostState } from "@/lib/hosts/host-state";
import { formatCount } from "./fleet-format";
import styles from "./fleet.module.css";

const ICON: Record<HostState, string> = {
  failed: "✕",
  aborted: "■",
  onboarding: "◐",
  decommissioning: "⏏",
  active: "✓",
  retired: "▪",
};

/**
 * Hosts per state at the top of the list, each a toggle that filters by it (several may be on);
 * "needs attention" is its own toggle. Counts follow the search, so a chip says what it would show.
 */
export function FleetCounts({
  counts,
  attentionCount,
  selected,
  attention,
  onToggleState,
  onToggleAttention,
}: {
  counts: Record<HostState, number>;
  attentionCount: number;
  selected: readonly HostState[];
  attention: boolean;
  onToggleState: (state: HostState) => void;
  onToggleAttention: () => void;
}) {
  return (
    <div className={styles.counts} role="group" aria-label="Hosts per state (click to filter)">
      {HOST_STATES.map((state) => {
        const pressed = selected.includes(state);
        // Empty lifecycle states stay out of the way unless they are being filtered on.
        if (counts[state] === 0 && !pressed && (state === "decommissioning" || state === "retired"))
          return null;
        return (
          <button
            key={state}
            type="button"
            className={`${styles.count} ${styles[`count-${state}`] ?? ""}`}
            aria-pressed={pressed}
            onClick={() => onToggleState(state)}
            data-testid={`count-${state}`}
            title={pressed ? `Stop filtering on ${state}` : `Show only ${state} hosts`}
          >
            <span aria-hidden="true">{ICON[state]}</span>
            <span className={styles.countNumber}>{formatCount(counts[state])}</span> {state}
          </button>
        );
      })}
      <button
        type="button"
        className={`${styles.count} ${styles["count-attention"]}`}
        aria-pressed={attention}
        onClick={onToggleAttention}
        data-testid="count-attention"
        title="Failed, template check failing or not possible, or stalled (next tick overdue)"
      >
        <span aria-hidden="true">⚠</span>
        <span className={styles.countNumber}>{formatCount(attentionCount)}</span> need attention
      </button>
    </div>
  );
}
