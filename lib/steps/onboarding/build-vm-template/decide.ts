/**
 * BuildVmTemplate's decision tables (docs/build-vm-template.md, tables 1 and 2), one function
 * per table, branches in the order of the table's rows.
 */

export type BuildState = "running" | "ok" | "failed";

/** What the status files on the host say, and whether the driver process really lives. */
export type BuildStatus = {
  /** `state` file; null when there is none. */
  state: BuildState | null;
  /** The pid file names a live process whose command line is our driver (not a reused PID). */
  driverAlive: boolean;
  /** Some process holds the driver's lock: the driver, or a member of its build that outlived it. */
  lockHeld: boolean;
  phase: string | null;
  note: string | null;
  /** Last lines of build.log, for a failure's context. */
  logTail: string[];
};

export type BuildDecision =
  | { kind: "adopt" }
  | { kind: "start" }
  | { kind: "poll"; phase: string | null }
  | { kind: "fail"; reason: string };

/** No deadline in the run context: the status files were left by an earlier run. */
export function decideWithoutDeadline(status: BuildStatus): BuildDecision {
  // alive (or its lock held) → adopt it, whatever the state file says (it can be missing or
  // garbled): a live build builds the same thing; never start a second beside it.
  if (status.driverAlive || status.lockHeld) return { kind: "adopt" };
  // anything else → upload, start detached. An `ok` from yesterday answers no question this run asked.
  return { kind: "start" };
}

/** Deadline in the run context: the status files are this run's. */
export function decideWithDeadline(status: BuildStatus): BuildDecision {
  // A live driver is polled whatever its state file says: "still running" means the process
  // lives, and a missing or garbled state file is no result.
  if (status.driverAlive) return { kind: "poll", phase: status.phase };
  switch (status.state) {
    // none → fail: the start did not take (never an endless restart loop).
    case null:
      return {
        kind: "fail",
        reason: "the template build did not start on the host (no status written)",
      };
    // running | dead → fail at once.
    case "running":
      return {
        kind: "fail",
        reason: `the template build died during ${status.phase ?? "an unknown phase"} without reporting a result`,
      };
    // ok → fail: the script says done, the API disagrees (the step only gets here when a VMID is still missing).
    case "ok":
      return {
        kind: "fail",
        reason:
          "the template build reported success, but Proxmox does not report every required VMID as a template",
      };
    // failed → fail(note) with the last log lines.
    case "failed":
      return {
        kind: "fail",
        reason: `template build failed: ${status.note ?? "no reason recorded"}`,
      };
  }
}
