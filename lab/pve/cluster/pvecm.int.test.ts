import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { startLab, type LabNode } from "../../index";
import { labExec } from "../../test-helpers";
import { waitUntil } from "../../processes";
import { apiGet, apiPost, tokenAuth } from "../test-helpers";

/**
 * Clusters made at run time on standalone lab nodes: `pvecm create` / `add` / `status` /
 * `nodes`, the API's `/cluster/status` and `/cluster/config/join`, `/etc/pve` replaced on a
 * join, the refusals of pve-cluster's join and the fault switches (a join that dies half-way,
 * a member whose corosync is gone).
 */

let nodes: LabNode[] = [];
const ip = (i: number) => `192.0.2.${21 + i}`;

beforeAll(async () => {
  for (let i = 0; i < 4; i++) {
    nodes.push(
      await startLab({
        name: `pve${i + 1}`,
        address: `${ip(i)}/24`,
        state: "onboarded",
        debianState: "proxmox",
        timeScale: 0.01,
        pve: { apiAuthFailureDelayMs: 20 },
      }),
    );
  }
}, 120_000);
afterAll(async () => {
  for (const node of nodes) await node.stop();
  nodes = [];
});

const sh = (node: LabNode, command: string, stdin?: string) =>
  labExec(node, command, stdin === undefined ? {} : { stdin });

const join = (
  node: LabNode,
  member: LabNode,
  memberIndex: number,
  options: { fp?: string; password?: string; extra?: string } = {},
) =>
  sh(
    node,
    `pvecm add ${ip(memberIndex)} --fingerprint ${options.fp ?? member.api.certSha256} --link0 ${ip(nodes.indexOf(node))}${options.extra ?? ""}`,
    `${options.password ?? member.ssh.password}\n`,
  );

async function clusterStatus(node: LabNode, token: { id: string; secret: string }) {
  const answer = await apiGet(node, "/cluster/status", tokenAuth(token));
  expect(answer.status).toBe(200);
  return answer.json!.data as Record<string, unknown>[];
}

describe("pvecm on lab nodes", () => {
  it("creates a cluster, joins members with the member's password and pinned fingerprint, and every member sees one quorate cluster", async () => {
    const [a, b, c] = nodes as [LabNode, LabNode, LabNode];
    const tokenA = a.pve.token!;
    const tokenB = b.pve.token!;

    const notYet = await sh(a, "pvecm status");
    expect(notYet.code).toBe(2);
    expect(notYet.stderr).toContain("does not exist - is this node part of a cluster?");

    const bad = await sh(a, "pvecm create 9-bad_name --link0 192.0.2.21");
    expect(bad.code).toBe(255);
    expect(bad.stderr).toContain(
      "clustername: value '9-bad_name' does not look like a valid node name",
    );

    const created = await sh(a, `pvecm create labc --link0 ${ip(0)}`);
    expect(created.stderr).toBe("");
    expect(created.code).toBe(0);
    expect(created.stdout).toContain("Writing corosync config to /etc/pve/corosync.conf");
    // The creating node keeps its configuration: its token still opens its API.
    expect(await clusterStatus(a, tokenA)).toMatchObject([
      { type: "cluster", name: "labc", nodes: 1, quorate: 1 },
      { type: "node", name: "pve1", online: 1, local: 1, ip: ip(0) },
    ]);
    expect((await sh(a, `pvecm create other --link0 ${ip(0)}`)).stderr).toContain(
      "cluster config '/etc/pve/corosync.conf' already exists",
    );

    const joined = await join(b, a, 0);
    expect(joined.stderr).toBe("");
    expect(joined.code).toBe(0);
    expect(joined.stdout).toContain("Login succeeded.");
    expect(joined.stdout).toContain("successfully added node 'pve2' to cluster.");
    // /etc/pve is the cluster's now: the token made on pve2 before the join is gone, pve1's
    // token opens pve2's API.
    expect((await apiGet(b, "/version", tokenAuth(tokenB))).status).toBe(401);
    expect((await apiGet(b, "/version", tokenAuth(tokenA))).status).toBe(200);
    expect((await sh(b, "cat /etc/pve/corosync.conf")).stdout).toContain("name: pve2");

    expect((await join(c, a, 0)).code).toBe(0);
    for (const node of [a, b, c]) {
      const status = await clusterStatus(node, tokenA);
      expect(status[0]).toMatchObject({ type: "cluster", name: "labc", nodes: 3, quorate: 1 });
      expect(status.slice(1).map((n) => [n.name, n.online, n.local])).toEqual(
        ["pve1", "pve2", "pve3"].map((n) => [n, 1, n === node.name ? 1 : 0]),
      );
    }
    const pvecmStatus = await sh(c, "pvecm status");
    expect(pvecmStatus.stdout).toContain("Quorate:          Yes");
    expect(pvecmStatus.stdout).toContain(`${ip(2)} (local)`);
    const pvecmNodes = await sh(c, "pvecm nodes");
    expect(pvecmNodes.stdout).toMatch(/\s+1\s+1 pve1\n\s+2\s+1 pve2\n\s+3\s+1 pve3 \(local\)\n/);

    // A VMID is the cluster's: one made on pve1 cannot be made again on pve2.
    expect((await sh(a, "qm create 150 --name one --memory 512")).code).toBe(0);
    const again = await sh(b, "qm create 150 --name two --memory 512");
    expect(again.code).toBe(255);
    expect(again.stderr).toContain(
      "unable to create VM 150 - VM 150 already exists on node 'pve1'",
    );
    expect((await sh(a, "qm destroy 150")).code).toBe(0);

    // join info, as pve-manager's join_info answers it, with each node's fingerprint.
    const info = await apiGet(a, "/cluster/config/join", tokenAuth(tokenA));
    expect(info.status).toBe(200);
    const data = info.json!.data as {
      nodelist: { name: string; pve_fp: string }[];
      totem: Record<string, string>;
    };
    expect(data.totem.cluster_name).toBe("labc");
    expect(data.nodelist.map((n) => [n.name, n.pve_fp])).toEqual([
      ["pve1", a.api.certSha256],
      ["pve2", b.api.certSha256],
      ["pve3", c.api.certSha256],
    ]);
  });

  it("refuses a wrong fingerprint, a wrong password, a node with guests, a name already in the cluster — changing nothing", async () => {
    const [a, , , d] = nodes as [LabNode, LabNode, LabNode, LabNode];
    const tokenD = d.pve.token!;
    const corosync = () => fs.readFileSync(path.join(a.root, "etc/pve/corosync.conf"), "utf8");
    const before = corosync();

    const wrongFp = await join(d, a, 0, { fp: nodes[1]!.api.certSha256 });
    expect(wrongFp.code).toBe(255);
    expect(wrongFp.stderr).toContain(`Can't connect to ${ip(0)}:8006 (certificate verify failed)`);

    const noPassword = await sh(
      d,
      `pvecm add ${ip(0)} --fingerprint ${a.api.certSha256} --link0 ${ip(3)}`,
    );
    expect(noPassword.code).toBe(255);
    expect(noPassword.stderr).toContain("EOF while reading password");

    const wrongPw = await join(d, a, 0, { password: "not-it" });
    expect(wrongPw.code).toBe(255);
    expect(wrongPw.stderr).toContain("authentication failure");

    // pve4 renamed pve2 would clash with the member of that name.
    fs.writeFileSync(path.join(d.root, "etc/hostname"), "pve2\n");
    const clash = await join(d, a, 0);
    fs.writeFileSync(path.join(d.root, "etc/hostname"), "pve4\n");
    expect(clash.code).toBe(255);
    expect(clash.stderr).toContain(
      "An error occurred on the cluster node: can't add existing node 'pve2'",
    );

    const guest = await sh(d, "qm create 100 --name g --memory 512");
    expect(guest.code).toBe(0);
    const withGuest = await join(d, a, 0);
    expect(withGuest.code).toBe(255);
    expect(withGuest.stderr).toContain("* this host already contains virtual guests");
    expect((await sh(d, "qm destroy 100")).code).toBe(0);

    expect(corosync()).toBe(before);
    expect(fs.existsSync(path.join(d.root, "etc/corosync/authkey"))).toBe(false);
    expect((await apiGet(d, "/version", tokenAuth(tokenD))).status).toBe(200);
  });

  it("a join that dies half-way leaves the node in the member's list only; `--force` finishes it", async () => {
    const [a, , , d] = nodes as [LabNode, LabNode, LabNode, LabNode];
    await d.switches.apply({ "pve.clusterJoinDiesHalfWay": true });
    const died = await join(d, a, 0);
    await d.switches.apply({ "pve.clusterJoinDiesHalfWay": false });
    expect(died.code).toBe(255);
    expect(died.stdout).toContain("Join request OK, finishing setup locally");
    // The member lists it, the node has no cluster config: 4 nodes listed, 3 online, quorate.
    const status = await clusterStatus(a, a.pve.token!);
    expect(status[0]).toMatchObject({ nodes: 4, quorate: 1 });
    expect(status.find((n) => n.name === "pve4")).toMatchObject({ online: 1 });
    expect((await sh(d, "pvecm status")).code).toBe(2);

    const again = await join(d, a, 0);
    expect(again.stderr).toContain("can't add existing node 'pve4'");
    const forced = await join(d, a, 0, { extra: " --force" });
    expect(forced.stderr).toBe("");
    expect(forced.stdout).toContain("forcing overwrite of configured node 'pve4'");
    expect((await sh(d, "pvecm nodes")).stdout).toContain("pve4 (local)");
  });

  it("a member whose corosync is gone is offline to the others and without quorum itself; two gone of four → no quorum", async () => {
    const [a, b, c] = nodes as [LabNode, LabNode, LabNode];
    const token = a.pve.token!;
    await c.switches.apply({ "pve.corosyncDown": true });
    expect((await clusterStatus(a, token))[0]).toMatchObject({ quorate: 1 });
    expect((await clusterStatus(a, token)).find((n) => n.name === "pve3")).toMatchObject({
      online: 0,
    });
    expect((await clusterStatus(c, token))[0]).toMatchObject({ quorate: 0 });
    await b.switches.apply({ "pve.corosyncDown": true });
    expect((await clusterStatus(a, token))[0]).toMatchObject({ quorate: 0 });
    expect((await sh(a, "pvecm status")).stdout).toContain("Quorate:          No");
    await b.switches.apply({ "pve.corosyncDown": false });
    await c.switches.apply({ "pve.corosyncDown": false });
    expect((await clusterStatus(c, token))[0]).toMatchObject({ quorate: 1 });
  });

  it("delnode, run on a member that stays: refuses itself, an unknown node and a cluster without quorum; removes a powered-off node (it leaves /etc/pve/nodes/<node>), and kills corosync on one still up", async () => {
    const [a, b, c, d] = nodes as [LabNode, LabNode, LabNode, LabNode];
    const token = a.pve.token!;
    const corosync = () => fs.readFileSync(path.join(a.root, "etc/pve/corosync.conf"), "utf8");
    const before = corosync();

    const self = await sh(a, "pvecm delnode pve1");
    expect(self.code).toBe(255);
    expect(self.stderr).toContain("Cannot delete myself from cluster!");
    const unknown = await sh(a, "pvecm delnode pve9");
    expect(unknown.code).toBe(255);
    expect(unknown.stderr).toContain("Node/IP: pve9 is not a known host of the cluster.");
    await b.switches.apply({ "pve.corosyncDown": true });
    await c.switches.apply({ "pve.corosyncDown": true });
    const noQuorum = await sh(a, "pvecm delnode pve4");
    await b.switches.apply({ "pve.corosyncDown": false });
    await c.switches.apply({ "pve.corosyncDown": false });
    expect(noQuorum.code).toBe(255);
    expect(noQuorum.stderr).toContain("cluster not ready - no quorum?");
    expect(corosync()).toBe(before);

    // Powered off, pve4 is offline to the others; delnode finds nothing to kill.
    const off = await apiPost(d, "/nodes/pve4/status", tokenAuth(token), { command: "shutdown" });
    expect(off.status).toBe(200);
    await waitUntil(() => d.power.state === "down", { timeoutMs: 30_000, what: "pve4 down" });
    expect((await clusterStatus(a, token)).find((n) => n.name === "pve4")).toMatchObject({
      online: 0,
    });
    const removed = await sh(a, "pvecm delnode pve4");
    expect(removed.code).toBe(0);
    expect(removed.stderr).toContain("Could not kill node (error = CS_ERR_NOT_EXIST)");
    expect(corosync()).not.toContain("name: pve4");
    expect(corosync()).toMatch(/config_version: \d+/);
    const version = (text: string) => Number(/config_version: (\d+)/.exec(text)![1]);
    expect(version(corosync())).toBe(version(before) + 1);
    const after = await clusterStatus(a, token);
    expect(after[0]).toMatchObject({ nodes: 3, quorate: 1 });
    expect(after.slice(1).map((n) => n.name)).toEqual(["pve1", "pve2", "pve3"]);
    expect(fs.existsSync(path.join(a.root, "etc/pve/nodes/pve4"))).toBe(true);

    // By its address, while up: its corosync is killed, it is cut off; the others stay quorate.
    const killed = await sh(a, `pvecm delnode ${ip(2)}`);
    expect(killed.code).toBe(0);
    expect(killed.stdout).toContain("Killing node 3");
    expect((await clusterStatus(a, token))[0]).toMatchObject({ nodes: 2, quorate: 1 });
    expect((await clusterStatus(c, token))[0]).toMatchObject({ quorate: 0 });
  });
});
