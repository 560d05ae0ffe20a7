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
