import { z } from "zod";

/** Proxmox wraps every answer as `{ "data": … }`. */
export const ZEnvelope = z.object({ data: z.unknown() });

export const ZVmListEntry = z
  .object({
    vmid: z.coerce.number().int(),
    name: z.string().optional(),
    status: z.string().optional(),
    // Present (1) only for templates.
    template: z.coerce.number().optional(),
  })
  .loose();
export const ZVmList = z.array(ZVmListEntry);
export type TVmListEntry = z.infer<typeof ZVmListEntry>;

/** A VM config: flat keys; values are strings or numbers (`template: 1`, `memory: 2048`). */
export const ZVmConfig = z.record(z.string(), z.union([z.string(), z.number()]));
export type TVmConfig = z.infer<typeof ZVmConfig>;

export const ZVersion = z.object({ version: z.string(), release: z.string().optional() }).loose();

/** `{ "<path>": { "<Priv>": 0|1 } }`; the number is the propagate flag, not the grant. */
export const ZPermissions = z.record(z.string(), z.record(z.string(), z.coerce.number()));

/** `GET /cluster/status`: `{type:"cluster", quorate}` when clustered, one `{type:"node", name, local}` per node. */
export const ZClusterStatusEntry = z
  .object({
    type: z.string(),
    name: z.string(),
    local: z.coerce.number().optional(),
    online: z.coerce.number().optional(),
    quorate: z.coerce.number().optional(),
  })
  .loose();
export const ZClusterStatus = z.array(ZClusterStatusEntry);
export type TClusterStatusEntry = z.infer<typeof ZClusterStatusEntry>;

/** `GET /cluster/resources?type=vm`: every guest of the cluster the token may audit. */
export const ZClusterVmResources = z.array(
  z
    .object({
      vmid: z.coerce.number().int(),
      node: z.string(),
      template: z.coerce.number().optional(),
    })
    .loose(),
);

/** `GET /cluster/options`: `ha.shutdown_policy` is absent when left at its default, `conditional`. */
export const ZClusterOptions = z
  .object({ ha: z.object({ shutdown_policy: z.string().optional() }).loose().optional() })
  .loose();

/** `GET /nodes`: one entry per cluster node (a standalone host lists itself). */
export const ZNodeListEntry = z.object({ node: z.string(), status: z.string().optional() }).loose();
export const ZNodeList = z.array(ZNodeListEntry);
export type TNodeListEntry = z.infer<typeof ZNodeListEntry>;

/** `GET /nodes/{node}/status` (needs `Sys.Audit`): the parts capacity is read from. */
export const ZNodeStatus = z
  .object({
    cpuinfo: z
      .object({
        // Logical CPUs: what Proxmox calls `maxcpu` and counts vCPUs against.
        cpus: z.coerce.number().int(),
        cores: z.coerce.number().int().optional(),
        sockets: z.coerce.number().int().optional(),
        model: z.string().optional(),
      })
      .loose(),
    memory: z.object({ total: z.coerce.number(), used: z.coerce.number().optional() }).loose(),
    pveversion: z.string().optional(),
    kversion: z.string().optional(),
  })
  .loose();
export type TNodeStatus = z.infer<typeof ZNodeStatus>;

/**
 * `GET /nodes/{node}/storage`: storages the token may see (`Datastore.Audit` or
 * `Datastore.AllocateSpace`; others are left out silently). Sizes in bytes; `active`/`enabled`
 * are 0/1, and an inactive storage reports no sizes.
 */
export const ZStorageStatusEntry = z
  .object({
    storage: z.string(),
    type: z.string(),
    content: z.string().default(""),
    active: z.coerce.number().optional(),
    enabled: z.coerce.number().optional(),
    shared: z.coerce.number().optional(),
    total: z.coerce.number().optional(),
    used: z.coerce.number().optional(),
    avail: z.coerce.number().optional(),
  })
  .loose();
export const ZStorageStatusList = z.array(ZStorageStatusEntry);
export type TStorageStatusEntry = z.infer<typeof ZStorageStatusEntry>;

/** `GET /storage`: one storage definition of `storage.cfg` (`type`: `rbd`, `cephfs`, `lvmthin`, …). */
export const ZStorageConfig = z.object({ storage: z.string(), type: z.string() }).loose();
export const ZStorageConfigList = z.array(ZStorageConfig);
