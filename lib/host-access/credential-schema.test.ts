import { describe, expect, it } from "vitest";

import { fieldErrors, ZCreateHost } from "@/lib/hosts/schemas";
import { ZHostCredentialInput } from "@/lib/host-access/credential-schema";

// The credential part of the host forms: "the console's key" needs no secret; the others do.
const host = {
  name: "pve-01",
  address: "10.0.0.5",
  sshPort: "22",
  sshUser: "root",
};

describe("host credential input", () => {
  it("takes the console's key without password or private key; the key id is optional", () => {
    expect(ZHostCredentialInput.parse({ authMethod: "console_key" })).toEqual({
      authMethod: "console_key",
    });
    const id = "0b7c6f1e-8d2a-4c1b-9f3e-2a5d6c7b8e9f";
    expect(
      ZCreateHost.parse({ ...host, authMethod: "console_key", consoleKeyId: id }),
    ).toMatchObject({ authMethod: "console_key", consoleKeyId: id, sshPort: 22 });
    // The form's hidden field when empty.
    expect(ZHostCredentialInput.parse({ authMethod: "console_key", consoleKeyId: "" })).toEqual({
      authMethod: "console_key",
    });
  });

  it("names the field for a malformed key id, a missing password or key, an unknown method", () => {
    const errorsOf = (input: Record<string, unknown>) => {
      const result = ZHostCredentialInput.safeParse(input);
      expect(result.success).toBe(false);
      return fieldErrors(result.error!);
    };
    expect(errorsOf({ authMethod: "console_key", consoleKeyId: "nope" })).toHaveProperty(
      "consoleKeyId",
    );
    expect(errorsOf({ authMethod: "password" })).toHaveProperty("password");
    expect(errorsOf({ authMethod: "private_key", privateKey: "ssh-ed25519 AAAA" })).toHaveProperty(
      "privateKey",
    );
    expect(errorsOf({ authMethod: "telepathy" }).authMethod?.[0]).toContain("console's key");
  });
});
