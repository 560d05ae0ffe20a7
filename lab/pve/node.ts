import {
  SwitchRegistry,
  booleanSwitch,
  optionalNumberSwitch,
  type FaultSwitch,
} from "../control/switches";
import { z } from "zod";

import { startPveApi, type PveApi } from "./api";
import { seedPveState, type PveState, type PveStorageLayout } from "./seed";
import { readToolFaults, writeToolFaults, type PveToolFaults } from "./state";

/**
 * The Proxmox side of one lab node: seeds the state (once; an existing root keeps what it has)
 * and starts the HTTPS API beside the SSH server. `startLab` calls this.
 */

export type LabPveOptions = {
  /** Node state at first start. Default `fresh` (plain Debian 13, nothing Proxmox). */
  state?: PveState;
  /** Storage layout for `proxmox`/`onboarded`. Default `dir-no-images` (Proxmox over Debian). */
  storage?: PveStorageLayout;
  /** For `onboarded`: VMIDs of finished templates to seed. */
  templates?: number[];
  /** HTTPS port; default a random free one. */
  apiPort?: number;
  /** Delay before a 401; Proxmox waits ~3 s. Default 3000. */
  apiAuthFailureDelayMs?: number;
};

export type LabPve = {
  /** For `onboarded`: the console's API token (`clupilot@pve!console`, privsep=1). */
  token: { id: string; secret: string } | null;
  /** Switches read by the simulated tools (`qm template` conversion failure). */
  readonly toolFaults: PveToolFaults;
  setToolFaults(patch: Partial<PveToolFaults>): PveToolFaults;
};

export async function startPveNode(
  root: string,
  node: string,
  options: LabPveOptions,
): Promise<{ api: PveApi; pve: LabPve }> {
  const seeded = seedPveState(root, {
    state: options.state ?? "fresh",
    node,
    ...(options.storage === undefined ? {} : { storage: options.storage }),
    ...(options.templates === undefined ? {} : { templates: options.templates }),
  });
  const api = await startPveApi({
    root,
    node,
    ...(options.apiPort === undefined ? {} : { port: options.apiPort }),
    ...(options.apiAuthFailureDelayMs === undefined
      ? {}
      : { authFailureDelayMs: options.apiAuthFailureDelayMs }),
  });
  const pve: LabPve = {
    token: seeded.token,
    get toolFaults() {
      return readToolFaults(root);
    },
    setToolFaults(patch) {
      const next = { ...readToolFaults(root), ...patch };
      writeToolFaults(root, next);
      return next;
    },
  };
  return { api, pve };
}

/** The API's and the Proxmox tools' switches, for the control page (`api.*`, `pve.*`). */
export function registerPveSwitches(
  registry: SwitchRegistry,
  api: PveApi,
  pve: LabPve,
): SwitchRegistry {
  const vmids: FaultSwitch<number[]> = {
    name: "api.config500Vmids",
    description:
      "GET …/qemu/{vmid}/config answers HTTP 500 for these existing VMIDs (Proxmox's 'does not exist' text unless a message is set).",
    input: { type: "json" },
    schema: z.array(z.number().int().min(100)),
    get: () => api.faults.config500Vmids,
    set: (value) => {
      api.faults.config500Vmids = value;
    },
  };
  return registry
    .register(
      booleanSwitch({
        name: "api.vmList502",
        description: "GET /nodes/{node}/qemu answers 502 Bad Gateway (HTML body).",
        get: () => api.faults.vmList502,
        set: (value) => {
          api.faults.vmList502 = value;
        },
      }),
    )
    .register(
      booleanSwitch({
        name: "api.vmListHang",
        description: "GET /nodes/{node}/qemu never answers.",
        get: () => api.faults.vmListHang,
        set: (value) => {
          api.faults.vmListHang = value;
        },
      }),
    )
    .register(vmids)
    .register(
      optionalNumberSwitch({
        name: "api.delayMs",
        description: "Every API request is answered this much later; empty = off.",
        min: 0,
        max: 600_000,
        unit: "ms",
        get: () => (api.faults.delayMs > 0 ? api.faults.delayMs : null),
        set: (value) => {
          api.faults.delayMs = value ?? 0;
        },
      }),
    )
    .register(
      booleanSwitch({
        name: "api.statusPostHang",
        description: "POST /nodes/{node}/status (shutdown, reboot) never answers and does nothing.",
        get: () => api.faults.statusPostHang,
        set: (value) => {
          api.faults.statusPostHang = value;
        },
      }),
    )
    .register(
      optionalNumberSwitch({
        name: "api.statusPostDelayMs",
        description:
          "POST /nodes/{node}/status (shutdown, reboot) is acted on and answered this much later, even if the client gave up; empty = at once.",
        min: 0,
        max: 600_000,
        unit: "ms",
        get: () => (api.faults.statusPostDelayMs > 0 ? api.faults.statusPostDelayMs : null),
        set: (value) => {
          api.faults.statusPostDelayMs = value ?? 0;
        },
      }),
    )
    .register(
      booleanSwitch({
        name: "api.statusPostHeld",
        description:
          "POST /nodes/{node}/status (shutdown, reboot) waits while on; turned off, the held ones are acted on and answered.",
        get: () => api.faults.statusPostHeld,
        set: (value) => {
          if (value) api.faults.statusPostHeld = true;
          else api.releaseHeldStatusPosts();
        },
      }),
    )
    .register(
      optionalNumberSwitch({
        name: "api.statusPostFailures",
        description:
          "The next N POST /nodes/{node}/status answer 500 and do nothing (counts down); empty = none.",
        min: 0,
        max: 1000,
        unit: "calls",
        get: () => (api.faults.statusPostFailures > 0 ? api.faults.statusPostFailures : null),
        set: (value) => {
          api.faults.statusPostFailures = value ?? 0;
        },
      }),
    )
    .register(
      booleanSwitch({
        name: "pve.clusterFsDown",
        description:
          "pve-cluster (pmxcfs) is down: pveum fails with 'ipcc_send_rec … Connection refused'.",
        get: () => pve.toolFaults.clusterFsDown === true,
        set: (value) => {
          pve.setToolFaults({ clusterFsDown: value });
        },
      }),
    )
    .register(
      booleanSwitch({
        name: "pve.templateConversionFails",
        description: "qm template writes 'template: 1', leaves the disks 'vm-…' and still exits 0.",
        get: () => pve.toolFaults.templateConversionFails === true,
        set: (value) => {
          pve.setToolFaults({ templateConversionFails: value });
        },
      }),
    );
}
