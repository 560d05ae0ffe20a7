import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { readCommand, refusalReason, sha256Hex, subscriptionPlan } from "./apply-subscription";

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

describe("ApplySubscription's read-back command", () => {
  it("passes shellcheck, and prints the key's SHA-256 and the answer with the key hidden", () => {
    // shellcheck is installed by .ci/run; a missing binary must fail, not skip.
    execFileSync("shellcheck", ["-s", "bash", "-"], { input: readCommand(), stdio: "pipe" });
    // Run with a stand-in pvesh that answers as pve-manager does for root.
    const answer = JSON.stringify({ key: KEY, status: "active", level: "c" });
    const out = execFileSync(
      "bash",
      ["-c", `pvesh() { printf '%s\\n' '${answer}'; }; uname() { echo pve1; }\n${readCommand()}`],
      { encoding: "utf8" },
    );
    expect(out).not.toContain(KEY);
    expect(out).toContain(`key-sha256=${sha256Hex(KEY)}`);
    expect(out).toContain('"key":"(hidden)"');
    expect(out).toContain("node=pve1");
  });
});
