import { z } from "zod";

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
