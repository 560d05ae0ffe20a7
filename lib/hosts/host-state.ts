import type { runs } from "@/lib/db/schema";

export type HostState = "onboarding" | "failed" | "active";

/** A host's state is its latest run's status; it is never stored twice. */
export function hostStateOf(runStatus: (typeof runs.$inferSelect)["status"] | null): HostState {
  switch (runStatus) {
    case "succeeded":
      return "active";
    case "failed":
      return "failed";
    default:
      return "onboarding";
  }
}
