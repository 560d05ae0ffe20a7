/**
 * The shutdown plan as an admin confirmed it when arming: kept with the mode so that a later
 * configuration change can be shown against what was confirmed.
 */
export type PowerPlanSnapshot = {
  targets: {
    id: string;
    name: string;
    kind: "pve-node" | "pbs";
    stage: number;
    runsConsole: boolean;
    feedPolicy: "all" | "any";
    /** UPS names. */
    feeds: string[];
    /** The exact request, secret masked. */
    request: string;
  }[];
};
