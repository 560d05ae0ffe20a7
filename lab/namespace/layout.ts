/**
 * Where a lab node's namespace puts the lab's own things, and the shape of a bind: shared by
 * the lab process (./binds.ts, ./namespace.ts) and the simulated tools, which run inside the
 * tool server and must not load the lab process's modules.
 */

export type Bind = {
  /** Where the node sees it. */
  target: string;
  /** What it is on the real system. */
  source: string;
  /** Read-only inside the node (the lab's own tools). */
  readOnly?: boolean;
};

/** The lab's client and scripts (lab/tools), inside every node. */
export const NODE_TOOLS_DIR = "/run/clupilot-lab/tools";
export const NODE_TOOLS_BIN = `${NODE_TOOLS_DIR}/bin`;
/** The node's lab-private folder (`<root>/.lab`: faults, kernel, the tool server's address). */
export const NODE_LAB_DIR = "/run/clupilot-lab/node";
