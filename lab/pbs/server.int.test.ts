import https from "node:https";
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";

import { waitUntil } from "../processes";
import { startLabPbs, type LabPbs } from "./server";

function call(
  pbs: LabPbs,
  method: string,
  apiPath: string,
  authorization: string | null,
  form?: Record<string, string>,
): Promise<{ status: number; json: { data?: unknown; message?: string } }> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      `${pbs.url}/api2/json${apiPath}`,
      {
        method,
        rejectUnauthorized: false,
        // A connection per call, as the console's pinned client makes them: a kept-alive socket
        // from before the power-off is dead, and reusing it is a race with its close (hang-up).
        agent: false,
        headers: {
          ...(authorization ? { Authorization: authorization } : {}),
          ...(form ? { "Content-Type": "application/x-www-form-urlencoded" } : {}),
        },
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (body += chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(body) }));
      },
    );
    req.on("error", reject);
    req.end(form ? new URLSearchParams(form).toString() : undefined);
  });
}

function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("error", (error: NodeJS.ErrnoException) => resolve(error.code === "ECONNREFUSED"));
  });
}

const servers: LabPbs[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((pbs) => pbs.stop()));
});

describe("the lab's Proxmox Backup Server", () => {
  it("takes PBS's token header and refuses the PVE form with 401", async () => {
    const pbs = await startLabPbs();
    servers.push(pbs);
    const good = `PBSAPIToken=${pbs.token.id}:${pbs.token.secret}`;
    expect((await call(pbs, "GET", "/version", good)).status).toBe(200);
    expect(
      (await call(pbs, "GET", "/version", `PVEAPIToken=${pbs.token.id}=${pbs.token.secret}`))
        .status,
    ).toBe(401);
    expect((await call(pbs, "GET", "/version", null)).status).toBe(401);
    expect(pbs.requests.map((r) => [r.scheme, r.authid])).toEqual([
      ["PBSAPIToken", pbs.token.id],
      ["PVEAPIToken", null],
      [null, null],
    ]);
  });

  it("shuts down on POST /nodes/localhost/status command=shutdown: null at once, gone after ~2 s, back when powered on", async () => {
    const pbs = await startLabPbs();
    servers.push(pbs);
    const auth = `PBSAPIToken=${pbs.token.id}:${pbs.token.secret}`;
    const res = await call(pbs, "POST", "/nodes/localhost/status", auth, { command: "shutdown" });
    expect(res).toEqual({ status: 200, json: { data: null } });
    expect(pbs.state).toBe("shutting-down");
    await waitUntil(() => refused(pbs.port), { timeoutMs: 5000, what: "the PBS to go away" });
    expect(pbs.state).toBe("down");
    await pbs.powerOn();
    expect((await call(pbs, "GET", "/version", auth)).status).toBe(200);
  });

  it("refuses the shutdown (403) without Sys.PowerManagement on /system/status and stays up", async () => {
    const pbs = await startLabPbs({ powerPrivilege: false });
    servers.push(pbs);
    const auth = `PBSAPIToken=${pbs.token.id}:${pbs.token.secret}`;
    const res = await call(pbs, "POST", "/nodes/localhost/status", auth, { command: "shutdown" });
    expect(res.status).toBe(403);
    expect(pbs.state).toBe("up");
  });
});
