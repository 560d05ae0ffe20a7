import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";

import { startLab, waitUntil, type LabNode } from "../index";
import { labExecOk } from "../test-helpers";
import { apiGet, apiPost, tokenAuth } from "./test-helpers";

/**
 * A lab node answers `POST /nodes/{node}/status command=shutdown` like a real one: `null` at
 * once, then (`sleep 2; poweroff`) its API and SSH go away until it is powered on again.
 */

/**
 * "refused" when nothing listens on the port, "open" when a connection is accepted, "reset" when
 * it was cut while the listener closed.
 */
function probe(port: number): Promise<"open" | "refused" | "reset"> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      resolve("open");
    });
    socket.once("error", (error: NodeJS.ErrnoException) =>
      error.code === "ECONNREFUSED"
        ? resolve("refused")
        : error.code === "ECONNRESET"
          ? resolve("reset")
          : reject(error),
    );
  });
}

const nodes: LabNode[] = [];
async function onboardedNode(): Promise<LabNode> {
  const node = await startLab({
    state: "onboarded",
    timeScale: 0.01,
    pve: { apiAuthFailureDelayMs: 50 },
  });
  nodes.push(node);
  return node;
}
afterEach(async () => {
  await Promise.all(nodes.splice(0).map((node) => node.stop()));
});

describe("a lab node shutting down through its API", () => {
  it("answers null at once, then stops answering API and SSH about two seconds later, until powered on", async () => {
    const node = await onboardedNode();
    const auth = tokenAuth(node.pve.token!);
    const sent = Date.now();
    const res = await apiPost(node, "/nodes/pve1/status", auth, { command: "shutdown" });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ data: null });
    // `sleep 2` first: the API still answers right after the call.
    expect((await apiGet(node, "/version", auth)).status).toBe(200);

    await waitUntil(async () => (await probe(node.api.port)) === "refused", {
      timeoutMs: 10_000,
      what: "the API to stop listening",
    });
    expect(Date.now() - sent).toBeGreaterThanOrEqual(2000);
    // The API closes first, then SSH: on a busy machine a probe between the two finds SSH's
    // listener closing ("reset"). Down is when both are closed.
    await waitUntil(() => node.power.state === "down", { timeoutMs: 10_000, what: "down" });
    expect(await probe(node.ssh.port)).toBe("refused");
    expect(node.power.history.map((r) => r.action)).toEqual(["poweroff"]);
    // It stays off: no reboot follows a poweroff.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await probe(node.api.port)).toBe("refused");

    await node.power.powerOn();
    expect((await apiGet(node, "/version", auth)).status).toBe(200);
    expect(await labExecOk(node, "echo up")).toBe("up\n");
    const request = node.api.requests.find((r) => r.method === "POST");
    expect(request).toMatchObject({
      path: "/api2/json/nodes/pve1/status",
      body: { command: "shutdown" },
      authid: node.pve.token!.id,
      status: 200,
    });
  });

  it("refuses a token without Sys.PowerMgmt (403) and stays up", async () => {
    const node = await onboardedNode();
    const out = await labExecOk(
      node,
      "pveum user add audit@pve && pveum acl modify /vms -user audit@pve -role PVEAuditor" +
        " && pveum user token add audit@pve power --privsep 0 --output-format json",
    );
    const token = JSON.parse(out) as { "full-tokenid": string; value: string };
    const res = await apiPost(
      node,
      "/nodes/pve1/status",
      tokenAuth({ id: token["full-tokenid"], secret: token.value }),
      { command: "shutdown" },
    );
    expect(res.status).toBe(403);
    expect(res.statusMessage).toBe("Permission check failed (/nodes/pve1, Sys.PowerMgmt)");
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect(node.power.state).toBe("up");
  });

  it("checks the command like Proxmox: missing or unknown is 400, nothing happens", async () => {
    const node = await onboardedNode();
    const auth = tokenAuth(node.pve.token!);
    const missing = await apiPost(node, "/nodes/pve1/status", auth, {});
    expect(missing.status).toBe(400);
    expect(missing.json?.errors).toEqual({
      command: "property is missing and it is not optional",
    });
    const unknown = await apiPost(node, "/nodes/pve1/status", auth, { command: "halt" });
    expect(unknown.status).toBe(400);
    expect(node.power.history).toEqual([]);
  });

  it("with api.statusPostHang the call never answers and the node stays up", async () => {
    const node = await onboardedNode();
    expect(await node.switches.apply({ "api.statusPostHang": true })).toEqual({ ok: true });
    const call = apiPost(
      node,
      "/nodes/pve1/status",
      tokenAuth(node.pve.token!),
      {
        command: "shutdown",
      },
      { timeoutMs: 1500 },
    );
    await expect(call).rejects.toThrow("timeout");
    await new Promise((resolve) => setTimeout(resolve, 2000));
    expect(node.power.state).toBe("up");
    expect(await probe(node.api.port)).toBe("open");
  });
});
