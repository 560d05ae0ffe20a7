import { describe, expect, it } from "vitest";
import { splitFailure } from "./failure-text";

describe("splitFailure", () => {
  it("puts what failed and what to do on one line, the quoted output apart", () => {
    const reason =
      "apt-get dist-upgrade exited 100: Reading package lists... ⏎ Building dependency tree... ⏎ E: Unable to locate package pve-manager — fix what the output names on the host (a running apt, the network, the mirrors), then Retry";
    expect(splitFailure(reason)).toEqual({
      headline:
        "apt-get dist-upgrade exited 100 — fix what the output names on the host (a running apt, the network, the mirrors), then Retry",
      output: [
        "Reading package lists...",
        "Building dependency tree...",
        "E: Unable to locate package pve-manager",
      ],
    });
  });

  it("keeps a quoted output without advice", () => {
    expect(splitFailure("build failed: a ⏎ b")).toEqual({
      headline: "build failed",
      output: ["a", "b"],
    });
  });

  it("a multi-line reason: the first line, the rest as output", () => {
    expect(splitFailure("SSH refused\n\nmore detail\n  indented")).toEqual({
      headline: "SSH refused",
      output: ["more detail", "  indented"],
    });
  });

  it("a one-line reason stays as it is", () => {
    expect(splitFailure("dpkg was interrupted — run dpkg --configure -a, then Retry")).toEqual({
      headline: "dpkg was interrupted — run dpkg --configure -a, then Retry",
      output: [],
    });
    expect(splitFailure(null).headline).toBe("failed without a reason");
  });
});
