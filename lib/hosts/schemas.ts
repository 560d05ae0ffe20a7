import { z } from "zod";
import { hostCredentialFields, refineHostCredential } from "@/lib/host-access/credential-schema";

// Hostnames and addresses end up inside SSH connection options and log lines, never a shell,
// but they are still held to what a host name or IP literal can be.
const HOST_NAME = /^[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?$/;
const ADDRESS =
  /^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$|^\[?[0-9a-fA-F:.]+\]?$/;
const SSH_USER = /^[a-z_][a-z0-9_-]{0,31}$/;

export const ZCreateHost = z
  .object({
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
  })
  .superRefine(refineHostCredential);

export type TCreateHost = z.infer<typeof ZCreateHost>;

export const ZHostId = z.uuid({ error: "Not a host id." });
export const ZRunId = z.uuid({ error: "Not a run id." });

/** Field errors in the shape the forms and the JSON API return. */
export function fieldErrors(error: z.ZodError): Record<string, string[]> {
  return z.flattenError(error).fieldErrors as Record<string, string[]>;
}
