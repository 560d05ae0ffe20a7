import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import type http from "node:http";
import https from "node:https";
import type net from "node:net";
import os from "node:os";
import path from "node:path";

import { loadOrCreateNodeCert } from "../pve/cert";

/**
 * A Proxmox Backup Server as the console's power target sees it: HTTPS on port 8007's shape
 * (a random loopback port here) with a self-signed certificate, PBS's token header
 * (`PBSAPIToken=user@realm!id:secret` — the PVE form is refused with 401), the privilege
 * `Sys.PowerManagement` on `/system/status`, and `POST /nodes/localhost/status command=shutdown`
 * answered at once, after which the server goes away until powered on. Every request is logged.
 */

export type LabPbsRequest = {
  method: string;
  path: string;
  body: Record<string, string>;
  /** The Authorization header's scheme as sent (`PBSAPIToken`, `PVEAPIToken`, …), null without. */
  scheme: string | null;
  /** The token that authenticated, null when none did. */
  authid: string | null;
  status: number;
  at: Date;
};

export type LabPbsFaults = {
  /** `POST /nodes/{node}/status` never answers and does nothing. */
  statusPostHang: boolean;
};

export type LabPbs = {
  name: string;
  url: string;
  port: number;
  /** SHA-256 of the certificate (DER), `AB:CD:…`. */
  certSha256: string;
  /** The console's token: `clupilot@pbs!console`. */
  token: { id: string; secret: string };
  faults: LabPbsFaults;
  readonly requests: readonly LabPbsRequest[];
  /** `up`, `shutting-down` (the call was answered, `sleep 2` runs) or `down`. */
  readonly state: "up" | "shutting-down" | "down";
  /** Whether the token holds Sys.PowerManagement on /system/status (default: granted). */
  setPowerPrivilege(granted: boolean): void;
  powerOn(): Promise<void>;
  /** Power cut (a BMC's power off): nothing answers from now on, without a shutdown. */
  powerOff(): Promise<void>;
  stop(): Promise<void>;
};

export type StartLabPbsOptions = {
  name?: string;
  port?: number;
  /** Default true: the documented setup grants Admin on /system/status to user and token. */
  powerPrivilege?: boolean;
};

const PBS_VERSION = { version: "4.0.14", release: "4", repoid: "8d5ed2b8" };
const TOKEN_RE = /^PBSAPIToken=([^\s!]+@[^\s!]+![^\s:]+):(\S+)$/;

export async function startLabPbs(options: StartLabPbsOptions = {}): Promise<LabPbs> {
  const name = options.name ?? "pbs1";
  const root = await mkdtemp(path.join(os.tmpdir(), "clupilot-lab-pbs-"));
  const cert = loadOrCreateNodeCert(root, name);
  const token = { id: "clupilot@pbs!console", secret: randomUUID() };
  const requests: LabPbsRequest[] = [];
  const faults: LabPbsFaults = { statusPostHang: false };
  const sockets = new Set<net.Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let state: LabPbs["state"] = "up";
  let powerPrivilege = options.powerPrivilege ?? true;

  const send = (res: http.ServerResponse, record: LabPbsRequest, status: number, body: unknown) => {
    record.status = status;
    const text = JSON.stringify(body);
    res.writeHead(status, {
      "Content-Type": "application/json;charset=UTF-8",
      "Content-Length": Buffer.byteLength(text),
    });
    res.end(text);
  };

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse) => {
    const url = new URL(req.url ?? "/", "https://lab");
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    const body = !text
      ? {}
      : (req.headers["content-type"] ?? "").startsWith("application/json")
        ? Object.fromEntries(
            Object.entries(JSON.parse(text) as Record<string, unknown>).map(([k, v]) => [
              k,
              String(v),
            ]),
          )
        : Object.fromEntries(new URLSearchParams(text));
    const header = req.headers.authorization;
    const record: LabPbsRequest = {
      method: req.method ?? "GET",
      path: url.pathname,
      body,
      scheme: header?.split("=")[0] ?? null,
      authid: null,
      status: 0,
      at: new Date(),
    };
    requests.push(record);

    const match = header === undefined ? null : TOKEN_RE.exec(header.trim());
    if (!match || match[1] !== token.id || match[2] !== token.secret) {
      return send(res, record, 401, {
        data: null,
        message: "authentication failed - invalid credentials",
      });
    }
    record.authid = token.id;

    if (record.method === "GET" && url.pathname === "/api2/json/version") {
      return send(res, record, 200, { data: PBS_VERSION });
    }
    const status = /^\/api2\/json\/nodes\/([^/]+)\/status$/.exec(url.pathname);
    if (record.method === "POST" && status) {
      if (faults.statusPostHang) return; // never answered; cut on power off or stop
      if (status[1] !== "localhost" && status[1] !== name) {
        return send(res, record, 400, { data: null, message: `no such node '${status[1]}'` });
      }
      if (body.command !== "shutdown" && body.command !== "reboot") {
        return send(res, record, 400, {
          data: null,
          message: "parameter verification errors",
          errors: { command: "value does not match the enumeration 'reboot, shutdown'" },
        });
      }
      if (!powerPrivilege) {
        return send(res, record, 403, { data: null, message: "permission check failed" });
      }
      send(res, record, 200, { data: null });
      goDown();
      return;
    }
    send(res, record, 404, { data: null, message: `Path '${url.pathname}' not found.` });
  };

  const server = https.createServer({ key: cert.key, cert: cert.cert }, (req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  server.on("connection", (socket: net.Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  server.on("tlsClientError", () => {});

  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => {
        server.off("error", reject);
        resolve();
      });
    });
  /** Cuts every connection and closes the port; resolves once the server has let go of both. */
  const close = (): Promise<void> => {
    for (const socket of sockets) socket.destroy();
    sockets.clear();
    if (!server.listening) return Promise.resolve();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  };
  let closing: Promise<void> = Promise.resolve();
  // `sleep 2; poweroff` and a moment for the services to stop, as on the PVE lab nodes.
  const goDown = () => {
    state = "shutting-down";
    const timer = setTimeout(() => {
      timers.delete(timer);
      closing = close();
      // The port refuses from the moment close() returns: "down" says exactly that, at once.
      state = "down";
    }, 2300);
    timers.add(timer);
  };

  await listen(options.port ?? 0);
  const port = (server.address() as net.AddressInfo).port;
  return {
    name,
    url: `https://127.0.0.1:${port}`,
    port,
    certSha256: cert.sha256,
    token,
    faults,
    requests,
    get state() {
      return state;
    },
    setPowerPrivilege(granted) {
      powerPrivilege = granted;
    },
    async powerOn() {
      if (state !== "down") return;
      await closing;
      await listen(port);
      state = "up";
    },
    async powerOff() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      state = "down";
      closing = close();
      await closing;
    },
    async stop() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      await Promise.all([closing, close()]);
      await rm(root, { recursive: true, force: true });
    },
  };
}
