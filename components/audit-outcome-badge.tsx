import type { AuditEntryView } from "@/lib/audit/list-audit";

const LOOK: Record<AuditEntryView["outcome"], { icon: string; className: string }> = {
  success: { icon: "✓", className: "badge badge-active" },
  failure: { icon: "✕", className: "badge badge-failed" },
  denied: { icon: "⊘", className: "badge badge-draft" },
};

/** An audit entry's outcome as icon + word (readable without colour) + colour. */
export function AuditOutcomeBadge({ outcome }: { outcome: AuditEntryView["outcome"] }) {
  const { icon, className } = LOOK[outcome];
  return (
    <span className={className} data-testid="audit-outcome" data-outcome={outcome}>
      <span aria-hidden="true">{icon}</span> {outcome}
    </span>
  );
}
