import { mkdir } from "node:fs/promises";
import path from "node:path";

import { startLab, type LabNode, type StartLabOptions } from "./index";

/**
 * Several lab nodes at once (`pve1` … `pveN`), each with its own root, SSH port and host key.
 * Every other option is handed to each `startLab` unchanged.
 */

export type StartFleetOptions = Omit<StartLabOptions, "name" | "port" | "root"> & {
  /** Number of nodes. Default 1. */
  nodes?: number;
  /** Node names; default `pve1` … `pveN`. */
  names?: readonly string[];
  /** Parent folder: node `pveK` lives in `<root>/pveK` (kept on stop). Default: temp folders. */
  root?: string;
};

export type LabFleet = {
  readonly nodes: readonly LabNode[];
  stop(): Promise<void>;
};

export const MAX_FLEET_NODES = 32;

export async function startFleet(options: StartFleetOptions = {}): Promise<LabFleet> {
  const { nodes: count = options.names?.length ?? 1, names, root, ...labOptions } = options;
  if (!Number.isInteger(count) || count < 1 || count > MAX_FLEET_NODES) {
    throw new Error(`lab: a fleet has 1 to ${MAX_FLEET_NODES} nodes, got ${String(count)}`);
  }
  const nodeNames = names ?? Array.from({ length: count }, (_, i) => `pve${i + 1}`);
  if (nodeNames.length !== count || new Set(nodeNames).size !== count) {
    throw new Error("lab: a fleet needs one distinct name per node");
  }
  for (const name of nodeNames) {
    if (!/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(name)) {
      throw new Error(`lab: ${JSON.stringify(name)} is not a valid host name`);
    }
  }

  const started = await Promise.allSettled(
    nodeNames.map(async (name, i) => {
      let nodeRoot: string | undefined;
      if (root !== undefined) {
        nodeRoot = path.resolve(root, name);
        await mkdir(nodeRoot, { recursive: true });
      }
      return startLab({
        ...labOptions,
        // Each node an address of its own (192.0.2.10, .11, …): pvecm names members by address.
        address: labOptions.address ?? `192.0.2.${10 + i}/24`,
        name,
        ...(nodeRoot === undefined ? {} : { root: nodeRoot }),
      });
    }),
  );
  const nodes = started.flatMap((result) => (result.status === "fulfilled" ? [result.value] : []));
  const failure = started.find((result) => result.status === "rejected");
  if (failure !== undefined) {
    await Promise.allSettled(nodes.map((node) => node.stop()));
    throw failure.reason;
  }

  let stopping: Promise<void> | null = null;
  return {
    nodes,
    stop() {
      stopping ??= Promise.allSettled(nodes.map((node) => node.stop())).then((results) => {
        const failed = results.find((result) => result.status === "rejected");
        if (failed !== undefined) throw failed.reason;
      });
      return stopping;
    },
  };
}
