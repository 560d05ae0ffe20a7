import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";

import { describe, expect, it } from "vitest";

import { startFleet } from "./fleet";

describe("startFleet", () => {
  it("starts N distinct nodes under <root>/<name>, keeps the root on stop", async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), "clupilot-fleet-"));
    try {
      const fleet = await startFleet({ nodes: 3, root });
      try {
        expect(fleet.nodes.map((n) => n.name)).toEqual(["pve1", "pve2", "pve3"]);
        expect(new Set(fleet.nodes.map((n) => n.ssh.port)).size).toBe(3);
        expect(new Set(fleet.nodes.map((n) => n.ssh.hostKeySha256)).size).toBe(3);
        for (const node of fleet.nodes) {
          expect(node.root).toBe(path.join(root, node.name));
          expect(await readFile(path.join(node.root, "etc/hostname"), "utf8")).toBe(
            `${node.name}\n`,
          );
        }
        // Each node its own mount namespace while up; none once it is down (nothing runs there).
        expect(fleet.nodes.map((n) => n.mountNamespace)).toEqual([
          expect.stringMatching(/^mnt:\[\d+\]$/),
          expect.stringMatching(/^mnt:\[\d+\]$/),
          expect.stringMatching(/^mnt:\[\d+\]$/),
        ]);
        expect(new Set(fleet.nodes.map((n) => n.mountNamespace)).size).toBe(3);
      } finally {
        await fleet.stop();
      }
      expect(fleet.nodes.map((n) => n.mountNamespace)).toEqual([null, null, null]);
      expect(existsSync(path.join(root, "pve2/etc/hostname"))).toBe(true);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it("refuses impossible sizes and names before starting anything", async () => {
    await expect(startFleet({ nodes: 0 })).rejects.toThrow("1 to 32 nodes");
    await expect(startFleet({ nodes: 2, names: ["a", "a"] })).rejects.toThrow("distinct");
    await expect(startFleet({ names: ["Bad_Name"] })).rejects.toThrow("not a valid host name");
  });
});
