import type { HostState } from "@/lib/hosts/host-state";

const LOOK: Record<HostState, { icon: string; label: string }> = {
  onboarding: { icon: "◐", label: "onboarding" },
  failed: { icon: "✕", label: "failed" },
  aborted: { icon: "■", label: "aborted" },
  active: { icon: "✓", label: "active" },
  decommissioning: { icon: "⏏", label: "decommissioning" },
  retired: { icon: "▪", label: "retired" },
};

/** A host's state as icon + word (readable without colour) + colour. */
export function StateBadge({ state }: { state: HostState }) {
  const { icon, label } = LOOK[state];
  return (
    <span className={`badge badge-${state}`} data-testid="state-badge" data-state={state}>
      <span aria-hidden="true">{icon}</span> {label}
    </span>
  );
}
