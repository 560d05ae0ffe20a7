import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { labExec, labExecOk } from "../../test-helpers";
import { startLabCluster, type LabCluster } from "./start";

let lab: LabCluster;

beforeAll(async () => {
  lab = await startLabCluster({
    nodes: 2,
    guests: [{ vmid: 101, type: "qemu", node: "pve2" }],
    apiAuthFailureDelayMs: 50,
  });
}, 60_000);

afterAll(async () => {
  await lab?.stop();
});

describe("a lab cluster node's SSH side", () => {
  it("lets root in by password on each node's own port and host key, running on that node's root as a Debian 13 host with Proxmox", async () => {
    expect(new Set(lab.nodes.map((n) => n.ssh.port)).size).toBe(2);
    expect(new Set(lab.nodes.map((n) => n.ssh.hostKeySha256)).size).toBe(2);
    for (const node of lab.nodes) {
      const out = await labExecOk(
        node,
        'uname -n; . /etc/os-release; echo "$VERSION_CODENAME"; pveversion',
      );
      const [name, codename, version] = out.trim().split("\n");
      expect(name).toBe(node.name);
      expect(codename).toBe("trixie");
      expect(version).toMatch(/^pve-manager\/9\.2/);
      // As pmxcfs has it: the same tree on every member, `local` the member's own node.
      const local = await labExecOk(node, "readlink -f /etc/pve/local");
      expect(local.trim()).toMatch(new RegExp(`/pmxcfs/nodes/${node.name}$`));
    }
  });

  it("sees the one etc/pve every member shares: a token added on one node is listed on the other", async () => {
    const [pve1, pve2] = lab.nodes;
    await labExecOk(
      pve1!,
      "pveum user add walk@pve && pveum user token add walk@pve shared --privsep 1",
    );
    const listed = await labExecOk(pve2!, "pveum user token list walk@pve --output-format json");
    expect(JSON.parse(listed)).toEqual([expect.objectContaining({ tokenid: "shared" })]);
    const guests = await labExecOk(pve2!, "ls /etc/pve/nodes/pve2/qemu-server");
    expect(guests.trim()).toBe("101.conf");
  });

  it("stops answering SSH while the node is powered off and answers again once it is on", async () => {
    const pve2 = lab.nodes[1]!;
    await lab.powerOff("pve2");
    await expect(labExec(pve2, "true", { readyTimeoutMs: 5_000 })).rejects.toThrow();
    await lab.powerOn("pve2");
    expect((await labExec(pve2, "uname -n")).stdout.trim()).toBe("pve2");
  });
});
