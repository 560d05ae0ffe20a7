import { describe, expect, it } from "vitest";
import { refusalReason, sha256Hex, subscriptionPlan } from "./apply-subscription";

const KEY = "pve2c-0123456789";

describe("ApplySubscription's decisions", () => {
  it("sets the key unless the host reads it back active with the same key", () => {
    const held = sha256Hex(KEY);
    expect(subscriptionPlan({ status: "active", keySha256: held }, KEY)).toBe("in-place");
    expect(
      subscriptionPlan({ status: "active", keySha256: sha256Hex("pve2c-9999999999") }, KEY),
    ).toBe("set");
    for (const status of ["notfound", "new", "invalid", "expired", "suspended"])
      expect(subscriptionPlan({ status, keySha256: held }, KEY)).toBe("set");
    expect(subscriptionPlan({ status: "active" }, KEY)).toBe("set");
  });

  it("a refusal says Proxmox's status and message, never the key, and what to do", () => {
    const reason = refusalReason({ status: "invalid", message: `Invalid license key ${KEY}` }, KEY);
    expect(reason).toBe(
      "Proxmox did not accept the subscription key: status invalid: Invalid license key ********. " +
        "The apt repositories were not changed (the host keeps no-subscription); check the key, " +
        "and that the host reaches shop.proxmox.com, then Retry",
    );
    expect(reason).not.toContain(KEY);
    expect(refusalReason({ status: "expired" }, KEY)).toMatch(
      /^Proxmox did not accept the subscription key: status expired\. /,
    );
  });
});
