import { seal } from "@/lib/secrets/seal";

/** A password or pasted key as the host forms take it. */
export type SecretCredentialInput = {
  authMethod: "password" | "private_key";
  password?: string | undefined;
  privateKey?: string | undefined;
  passphrase?: string | undefined;
};

/**
 * The credentials row for a password or a pasted private key: the secret as JSON, sealed with
 * lib/secrets (services' loadAuth reads exactly this shape). The key gets its final newline back
 * because the form trims it and some parsers insist on it.
 */
export function sealCredential(input: SecretCredentialInput): {
  kind: "password" | "private_key";
  sealed: string;
} {
  if (input.authMethod === "password") {
    return { kind: "password", sealed: seal(JSON.stringify({ password: input.password })) };
  }
  return {
    kind: "private_key",
    sealed: seal(
      JSON.stringify({
        privateKey: `${input.privateKey?.trim() ?? ""}\n`,
        passphrase: input.passphrase || undefined,
      }),
    ),
  };
}
