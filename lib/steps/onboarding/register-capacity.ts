import { advance, fail, type Outcome, type Step } from "@/lib/pipeline/step";
import type { TNodeStatus, TStorageStatusEntry } from "@/lib/proxmox/schemas";
import { withPermanentProxmoxFailures } from "./proxmox-failure";
import type { HostServices } from "./services";
import { alreadyInPlace } from "../../pipeline/already-in-place";

const GIB = 1024 ** 3;
const MIB = 1024 ** 2;

export type ImageStorage = { storage: string; type: string; active: boolean; totalGib: number };

export type Capacity = {
  /** Logical CPUs (Proxmox's `maxcpu`): what vCPUs are counted against. */
  cores: number;
  memoryMib: number;
  /** Sum of the active storages that accept disk images, whole GiB. */
  imageStorageGib: number;
  imageStorages: ImageStorage[];
};

/** The numbers, from `GET /nodes/{node}/status` and `GET /nodes/{node}/storage?content=images`. */
export function computeCapacity(
  status: TNodeStatus,
  storages: readonly TStorageStatusEntry[],
): Capacity {
  const imageStorages = storages
    // The API filters by content already; a storage that is disabled holds nothing we can use.
    .filter((s) => s.content.split(",").includes("images") && s.enabled !== 0)
    .map((s) => ({
      storage: s.storage,
      type: s.type,
      active: s.active !== 0,
      totalGib: Math.floor((s.total ?? 0) / GIB),
    }));
  return {
    cores: status.cpuinfo.cpus,
    memoryMib: Math.floor(status.memory.total / MIB),
    imageStorageGib: imageStorages.filter((s) => s.active).reduce((sum, s) => sum + s.totalGib, 0),
    imageStorages,
  };
}

/** A host whose image capacity is 0 is never active: fail, saying what to fix. */
export function judgeCapacity(node: string, capacity: Capacity): Outcome {
  const summary = `${capacity.cores} CPUs, ${capacity.memoryMib} MiB RAM, ${capacity.imageStorageGib} GiB for disk images`;
  if (capacity.imageStorageGib > 0) {
    const names = capacity.imageStorages
      .filter((s) => s.active && s.totalGib > 0)
      .map((s) => s.storage);
    return advance(`${summary} (${names.join(", ")})`);
  }
  if (capacity.imageStorages.length === 0) {
    return fail(
      `no storage on ${node} accepts disk images (content "images"), so no VM can be placed there. ` +
        'Proxmox installed over Debian leaves "local" without it: add it, keeping the other types ' +
        "(pvesm set local --content <current list>,images), or add an LVM-thin or ZFS storage, then retry. " +
        "(A storage the token may not audit is not listed: the token needs Datastore.Audit on /storage.)",
    );
  }
  const inactive = capacity.imageStorages.filter((s) => !s.active).map((s) => s.storage);
  if (inactive.length > 0) {
    return fail(
      `the storages that accept disk images on ${node} (${inactive.join(", ")}) are not active, so they offer no space; ` +
        "check them with pvesm status on the host (mount, pool, volume group), then retry",
    );
  }
  return fail(
    `the storages that accept disk images on ${node} (${capacity.imageStorages.map((s) => s.storage).join(", ")}) ` +
      "report less than 1 GiB in total; give them space, then retry",
  );
}

/**
 * Goal: CPU, memory and disk-image capacity recorded on the host, read from the API (after
 * BuildVmTemplate, whose storage fix must have happened before capacity is counted). The
 * numbers are recorded even when the step fails, so the host page shows what was found.
 */
export const registerCapacity: Step<HostServices> = {
  name: "RegisterCapacity",
  maxDuration: () => 300,
  visit: (ctx) =>
    withPermanentProxmoxFailures(async () => {
      const host = await ctx.services.host();
      const client = await ctx.services.proxmox();
      const capacity = computeCapacity(await client.nodeStatus(), await client.imageStorages());
      for (const s of capacity.imageStorages) {
        ctx.log(
          `storage ${s.storage} (${s.type}) accepts disk images: ${s.active ? `${s.totalGib} GiB` : "not active"}`,
        );
      }
      const unchanged =
        host.capacityCores === capacity.cores &&
        host.capacityMemoryMib === capacity.memoryMib &&
        host.capacityImageStorageGib === capacity.imageStorageGib &&
        host.capacityRegisteredAt !== null;
      if (!unchanged) {
        await ctx.services.updateHost({
          capacityCores: capacity.cores,
          capacityMemoryMib: capacity.memoryMib,
          capacityImageStorageGib: capacity.imageStorageGib,
          capacityRegisteredAt: new Date(),
        });
      }
      const judged = judgeCapacity(host.nodeName ?? host.name, capacity);
      return unchanged && judged.kind === "advance"
        ? alreadyInPlace(ctx, `capacity as recorded: ${judged.detail ?? ""}`)
        : judged;
    }),
};
