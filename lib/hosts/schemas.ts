import { z } from "zod";
import { hostCredentialFields, refineHostCredential } from "@/lib/host-access/credential-schema";

// Hostnames and addresses end up inside SSH connection options and log lines, never a shell,
// but they are still held to what a host name or IP literal can be.
const HOST_NAME = /^[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?$/;
const ADDRESS =
  /^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$|^\[?[0-9a-fA-F:.]+\]?$/;
const SSH_USER = /^[a-z_][a-z0-9_-]{0,31}$/;

/** pve-common's `pve-node` format, which `pvecm create` holds a cluster name to (≤ 15). */
export const CLUSTER_NAME = /^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?$/;
const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

const ZLink0 = z
  .string({ error: "Enter the address corosync uses on this host (link0)." })
  .trim()
  .min(1, "Enter the address corosync uses on this host (link0).")
  .max(45, "An IPv4 or IPv6 address of this host.")
  .refine(
    (value) => IPV4.test(value) || z.ipv6().safeParse(value).success,
    "An IPv4 or IPv6 address of this host (not a DNS name): corosync's link0.",
  );

/**
 * What onboarding does about a cluster (issue 31): nothing (standalone), create one on this host,
 * or join the cluster of a host the console onboarded.
 */
export const ZHostCluster = z.discriminatedUnion(
  "mode",
  [
    z.object({ mode: z.literal("none") }),
    z.object({
      mode: z.literal("create"),
      name: z
        .string({ error: "Name the new cluster." })
        .trim()
        .min(1, "Name the new cluster.")
        .max(15, "At most 15 characters (Proxmox's limit for a cluster name).")
        .regex(CLUSTER_NAME, "Letters, digits and inner hyphens only, like a Proxmox node name."),
      link0: ZLink0,
    }),
    z.object({
      mode: z.literal("join"),
      memberHostId: z.uuid({ error: "Choose the cluster member to join through." }),
      link0: ZLink0,
    }),
  ],
  { error: "Choose standalone, a new cluster, or joining a cluster." },
);

export type THostCluster = z.infer<typeof ZHostCluster>;

/** The form sends `cluster.mode`, `cluster.name`, …: one nested object, as the JSON API takes. */
function nestClusterFields(value: unknown): unknown {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return value;
  const input = value as Record<string, unknown>;
  const flat = Object.keys(input).filter((key) => key.startsWith("cluster."));
  if (flat.length === 0 || "cluster" in input) return value;
  const rest: Record<string, unknown> = {};
  const cluster: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(input)) {
    if (!key.startsWith("cluster.")) rest[key] = v;
    else if (v !== "") cluster[key.slice("cluster.".length)] = v;
  }
  return { ...rest, cluster };
}

/**
 * A Proxmox VE subscription key as pve-manager's `PUT /nodes/{node}/subscription` takes it
 * (PVE::API2::Subscription's key pattern, the schema's `pve([1248])([cbsp])-[0-9a-f]{10}`):
 * sockets 1/2/4/8, level c(ommunity)/b(asic)/s(tandard)/p(remium), ten hex digits. The `-arm-`
 * keys newer pve-manager takes are left out: CheckOperatingSystem admits x86_64 hosts only,
 * where Proxmox refuses an arm64 key.
 */
export const SUBSCRIPTION_KEY = /^pve[1248][cbsp]-[0-9a-f]{10}$/;

/** Optional: empty or absent = no subscription (the no-subscription repository, as before). */
export const ZSubscriptionKey = z.preprocess(
  (value) => {
    if (value === null || value === undefined) return undefined;
    if (typeof value !== "string") return value;
    const trimmed = value.trim();
    return trimmed === "" ? undefined : trimmed;
  },
  z
    .string({ error: "A subscription key is text, like pve2c-0123456789." })
    .max(32, "At most 32 characters: a key looks like pve2c-0123456789.")
    .regex(
      SUBSCRIPTION_KEY,
      "Not a Proxmox VE subscription key: pve, the sockets (1, 2, 4 or 8), the level (c, b, s or p), a dash and 10 hex digits, like pve2c-0123456789.",
    )
    .optional(),
);

/** The fields of a new host (the edit form reuses some). */
export const ZCreateHostFields = z.object({
  name: z
    .string()
    .trim()
    .min(1, "Give the host a name.")
    .max(63, "At most 63 characters.")
    .regex(
      HOST_NAME,
      "Letters, digits and inner hyphens only, like a Proxmox node name (e.g. pve-01).",
    ),
  address: z
    .string()
    .trim()
    .min(1, "Enter the IP address or DNS name the console reaches the host on.")
    .max(253, "At most 253 characters.")
    .regex(ADDRESS, "Enter an IPv4/IPv6 address or a DNS name."),
  sshPort: z.coerce
    .number({ error: "Enter a port number." })
    .int("Enter a whole number.")
    .min(1, "Ports run from 1 to 65535.")
    .max(65535, "Ports run from 1 to 65535."),
  apiPort: z.preprocess(
    (value) => (value === "" || value === null || value === undefined ? 8006 : value),
    z.coerce
      .number({ error: "Enter a port number." })
      .int("Enter a whole number.")
      .min(1, "Ports run from 1 to 65535.")
      .max(65535, "Ports run from 1 to 65535."),
  ),
  sshUser: z
    .string()
    .trim()
    .min(1, "Enter the SSH user (root, or a user with passwordless sudo).")
    .regex(SSH_USER, "A Linux user name: lower-case letters, digits, _ and -."),
  ...hostCredentialFields,
  cluster: ZHostCluster.default({ mode: "none" }),
  subscriptionKey: ZSubscriptionKey,
});

export const ZCreateHost = z.preprocess(
  nestClusterFields,
  ZCreateHostFields.superRefine(refineHostCredential),
);

/** A new host; without `cluster` it stays standalone. */
export type TCreateHost = Omit<z.infer<typeof ZCreateHost>, "cluster"> & {
  cluster?: THostCluster;
};

export const ZHostId = z.uuid({ error: "Not a host id." });
export const ZRunId = z.uuid({ error: "Not a run id." });

/** Field errors in the shape the forms and the JSON API return. */
export function fieldErrors(error: z.ZodError): Record<string, string[]> {
  return z.flattenError(error).fieldErrors as Record<string, string[]>;
}
