import type { ControllerKind } from "@/lib/power/queries/power-back-preview";

/** A host's power controller as the power pages name it. */
export const CONTROLLER_WORDS: Record<ControllerKind, string> = {
  redfish: "Redfish",
  ipmi: "IPMI",
  wol: "Wake-on-LAN",
  "pve-wol": "Wake-on-LAN via a cluster member",
};
