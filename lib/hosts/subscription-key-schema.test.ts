import { describe, expect, it } from "vitest";
import { fieldErrors, ZCreateHost, ZSubscriptionKey } from "./schemas";

const base = {
  name: "pve-01",
  address: "192.0.2.10",
  sshPort: 22,
  sshUser: "root",
  authMethod: "password",
  password: "hunter2-hunter2",
};

describe("the subscription key field", () => {
  it("takes every level and socket count pve-manager's key pattern takes, trimmed", () => {
    for (const key of [
      "pve1c-0123456789",
      "pve2b-abcdef0123",
      "pve4s-0000000000",
      "pve8p-ffffffffff",
    ])
      expect(ZSubscriptionKey.parse(key)).toBe(key);
    expect(ZSubscriptionKey.parse("  pve2c-0123456789\n")).toBe("pve2c-0123456789");
  });

  it("treats absent, null and blank as no key", () => {
    expect(ZSubscriptionKey.parse(undefined)).toBeUndefined();
    expect(ZSubscriptionKey.parse(null)).toBeUndefined();
    expect(ZSubscriptionKey.parse("   ")).toBeUndefined();
    const host = ZCreateHost.parse(base);
    expect(host.subscriptionKey).toBeUndefined();
  });

  it.each([
    ["pve3c-0123456789", "3 sockets"],
    ["pve2x-0123456789", "level x"],
    ["pve2c-012345678", "9 hex digits"],
    ["pve2c-0123456789a", "11 hex digits"],
    ["pve2c-012345678G", "not hex"],
    ["PVE2C-0123456789", "upper case"],
    ["pve2c-arm-0123456789", "an arm64 key"],
    ["pve2c-0123456789; rm -rf /", "shell"],
    ["pve2c-0123456789\npve2c-0123456789", "two lines"],
    ["$(id)", "substitution"],
    ["x".repeat(10_000), "huge"],
  ])("refuses %j (%s) with a field error", (key) => {
    const result = ZCreateHost.safeParse({ ...base, subscriptionKey: key });
    expect(result.success).toBe(false);
    if (result.success) return;
    expect(fieldErrors(result.error).subscriptionKey?.[0]).toMatch(
      /subscription key|32 characters/,
    );
  });

  it("refuses a key that is not text", () => {
    const result = ZCreateHost.safeParse({ ...base, subscriptionKey: 12 });
    expect(result.success).toBe(false);
    if (!result.success)
      expect(fieldErrors(result.error).subscriptionKey?.[0]).toMatch(/subscription key is text/);
  });
});
