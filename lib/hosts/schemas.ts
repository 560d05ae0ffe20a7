import { z } from "zod";

// Hostnames and addresses end up inside SSH connection options and log lines, never a shell,
// but they are still held to what a host name or IP literal can be.
const HOST_NAME = /^[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?$/;
const ADDRESS =
  /^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$|^\[?[0-9a-fA-F:.]+\]?$/;
const SSH_USER = /^[a-z_][a-z0-9_-]{0,31}$/;

/**
 * How the console logs in to a host: a password, a pasted private key, or the console's own key
 * (lib/console-key; the host stores no private key of its own then). Shared by the add-host form
 * and the edit-host form: spread `hostCredentialFields` into an object schema and refine it with
 * `refineHostCredential`, or use `ZHostCredentialInput` alone.
 */
export const AUTH_METHODS = ["console_key", "password", "private_key"] as const;
export type AuthMethod = (typeof AUTH_METHODS)[number];

export const hostCredentialFields = {
  authMethod: z.enum(AUTH_METHODS, {
    error: "Choose the console's key, a password or a private key.",
  }),
  password: z.string().max(1024, "At most 1024 characters.").optional(),
  privateKey: z.string().max(16384, "That is longer than any SSH private key.").optional(),
  passphrase: z.string().max(1024, "At most 1024 characters.").optional(),
  /**
   * The console key whose install command the operator was shown; a key rotated away meanwhile
   * is refused, so the host never depends on a key the console no longer trusts.
   */
  consoleKeyId: z.preprocess(
    (value) => (value === "" || value === null ? undefined : value),
    z.uuid({ error: "Not a console key id; reload the page." }).optional(),
  ),
};

type HostCredentialValue = {
  authMethod: AuthMethod;
  password?: string | undefined;
  privateKey?: string | undefined;
};

export function refineHostCredential(value: HostCredentialValue, ctx: z.RefinementCtx): void {
  if (value.authMethod === "password" && !value.password) {
    ctx.addIssue({ code: "custom", path: ["password"], message: "Enter the SSH password." });
  }
  if (value.authMethod === "private_key") {
    const key = value.privateKey?.trim() ?? "";
    if (!key) {
      ctx.addIssue({ code: "custom", path: ["privateKey"], message: "Paste the private key." });
    } else if (
      !/^-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]+-----END [A-Z ]*PRIVATE KEY-----$/.test(key)
    ) {
      ctx.addIssue({
        code: "custom",
        path: ["privateKey"],
        message:
          "Paste the whole key, from -----BEGIN … PRIVATE KEY----- to -----END … PRIVATE KEY-----.",
      });
    }
  }
}

export const ZHostCredentialInput = z
  .object(hostCredentialFields)
  .superRefine(refineHostCredential);
export type THostCredentialInput = z.infer<typeof ZHostCredentialInput>;

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
