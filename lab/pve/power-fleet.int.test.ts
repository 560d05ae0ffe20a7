import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { ProxmoxClient } from "@/lib/proxmox/client";
import { pinnedHttpsRequest, probeApi } from "@/lib/proxmox/pinned-https";
import { waitUntil } from "../index";
import { startPowerFleet, type PowerFleet, type PowerFleetNode } from "./power-fleet";

/**
 * The power-only fleet answers the console's own client as a lab node does: the version with
 * the token, a shutdown accepted with `null` and the node gone shortly after, the fault that
 * fails the first K shutdowns, and every request recorded.
 */

let fleet: PowerFleet;

beforeAll(async () => {
  fleet = await startPowerFleet({ nodes: 3, downAfterMs: 200, authFailureDelayMs: 50 });
});
afterAll(async () => {
  await fleet?.stop();
});

const clientOf = (node: PowerFleetNode, secret = node.token.secret) =>
  new ProxmoxClient({
    baseUrl: node.url,
    node: node.name,
    tokenId: node.token.id,
    tokenSecret: secret,
    certSha256: fleet.certSha256,
    timeoutMs: 5000,
  });

describe("the lab's power fleet", () => {
  it("serves each node on its own port with the shared certificate and its own token", async () => {
    const [a, b] = fleet.nodes;
    expect(a!.port).not.toBe(b!.port);
    expect(a!.name).toBe("pve1");
    expect(await clientOf(a!).version()).toMatchObject({ release: "9.1" });
    await expect(clientOf(a!, b!.token.secret).version()).rejects.toThrow(/401/);
    const anonymous = await pinnedHttpsRequest(
      { baseUrl: a!.url, certSha256: fleet.certSha256 },
      { method: "GET", path: "/version" },
    );
    expect(anonymous.status).toBe(401);
    expect(await probeApi({ baseUrl: a!.url, certSha256: fleet.certSha256 })).toEqual({
      answers: true,
    });
  });

  it("accepts a shutdown with null, then stops listening", async () => {
    const node = fleet.nodes[1]!;
    await clientOf(node).shutdownNode();
    const post = node.requests.at(-1)!;
    expect(post).toMatchObject({ method: "POST", status: 200, body: { command: "shutdown" } });
    expect(post.authid).toBe(node.token.id);
    await waitUntil(() => node.state === "down", { timeoutMs: 5000, what: "the node down" });
    const probe = await probeApi({ baseUrl: node.url, certSha256: fleet.certSha256 });
    expect(probe.answers).toBe(false);
    await node.powerOn();
    expect(await clientOf(node).version()).toMatchObject({ release: "9.1" });
  });

  it("fails the first K shutdowns with 500 and does nothing, then accepts", async () => {
    const node = fleet.nodes[2]!;
    node.faults.statusPostFailures = 2;
    await expect(clientOf(node).shutdownNode()).rejects.toThrow(/500/);
    await expect(clientOf(node).shutdownNode()).rejects.toThrow(/500/);
    expect(node.state).toBe("up");
    await clientOf(node).shutdownNode();
    expect(node.requests.filter((r) => r.method === "POST").map((r) => r.status)).toEqual([
      500, 500, 200,
    ]);
    await waitUntil(() => node.state === "down", { timeoutMs: 5000, what: "the node down" });
    expect(fleet.requests.filter((r) => r.node === node.name)).toHaveLength(3);
    await fleet.reset();
    expect(fleet.nodes.every((n) => n.state === "up")).toBe(true);
  });
});
