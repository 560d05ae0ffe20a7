import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

/**
 * A simulated tool without its link in lab/tools/bin is not simulated at all: the lab host's
 * PATH falls through to the machine's own program. For `poweroff` that was this machine's real
 * /sbin/poweroff, reached from a lab host.
 */
const here = import.meta.dirname;
const bin = path.resolve(here, "../../tools/bin");

describe("the lab's Debian tools", () => {
  it("every tool main.ts simulates has its link in lab/tools/bin", () => {
    const main = fs.readFileSync(path.join(here, "main.ts"), "utf8");
    const handled = [...main.matchAll(/^\s+case "([^"]+)":/gm)].map((match) => match[1]!);
    expect(handled).toEqual(expect.arrayContaining(["reboot", "poweroff", "halt", "shutdown"]));
    const linked = new Set(fs.readdirSync(bin));
    expect(handled.filter((tool) => !linked.has(tool))).toEqual([]);
  });
});
