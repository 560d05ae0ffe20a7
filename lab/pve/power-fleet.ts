import fs from "node:fs";
import type http from "node:http";
import https from "node:https";
import type net from "node:net";
import os from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";

import { parseTokenHeader, readBodyParams } from "./api";
import { loadOrCreateNodeCert } from "./cert";
import { PVE_VERSION } from "./seed";

/**
 * A fleet of Proxmox VE nodes as the power shutdown sees them, from one process: N HTTPS node
 * APIs, each on its own loopback port, sharing one self-signed certificate (RSA 2048, as
 * pve-cluster makes), each with its own API token. Only what a shutdown needs is served, with
 * Proxmox's answers (lab/pve/api.ts and routes.ts are the reference):
 *
 * - `GET /api2/json/version` — the version, with a valid token; without a header 401 "No
 *   ticket" (the console's probe counts any answer as "still up").
 * - `POST /api2/json/nodes/{node}/status command=shutdown|reboot` — `{"data":null}` at once;
 *   the node then goes down `downAfterMs` later (Proxmox runs `sleep 2; poweroff` in the
 *   background): it stops listening (connections refused) and its open connections are cut.
 *   A reboot comes back `rebootUpAfterMs` after that.
 * - A token that does not match: 401 "authentication failure" after `authFailureDelayMs`
 *   (Proxmox waits ~3 s). Anything else: 501, as the lab answers what it does not implement.
 *
 * Per node, the fault `statusPostFailures`: the next K shutdown POSTs answer 500 ("unable to
 * read tail", as api.ts's fault) and do nothing; `statusPostDelayMs`: an accepted POST is
 * answered that much later. Every request is recorded with the node, when it arrived, when it
 * was answered and its status — on the node and fleet-wide, in arrival order.
 *
 * Built for benchmarks of the console's power path with hundreds or thousands of targets (a
 * full lab node per target — SSH, root, tools — would measure the lab, not the console).
 *
 * Ports: a node keeps its port while it is down, as a real host keeps its address. The other
 * lab services pick theirs at random from 20000 up to the kernel's ephemeral range
 * (lab/listen-port.ts); with a thousand nodes down at once, one of them was taken by another
 * test's server in between and the node could not come back. So the fleet takes its ports from
 * a range of its own, FLEET_PORTS (below the other labs', above the ports services fix).
 */

/** Where the fleet's nodes listen: no other lab service picks a port here. */
export const FLEET_PORTS = { low: 10_000, high: 19_999 } as const;
/** A node coming back waits this long for its port to be free again. */
const RETURN_WAIT_MS = 15_000;

/** Listens on exactly `port`; false when it is taken. */
function listenOn(server: https.Server, port: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const failed = (error: NodeJS.ErrnoException) => {
      server.off("listening", listening);
      if (error.code === "EADDRINUSE") resolve(false);
      else reject(error);
    };
    const listening = () => {
      server.off("error", failed);
      resolve(true);
    };
    server.once("error", failed);
    server.once("listening", listening);
    server.listen(port, "127.0.0.1");
  });
}

export type PowerFleetRequest = {
  node: string;
  method: string;
  path: string;
  /** Parameters of a POST body (form-encoded or JSON). */
  body: Record<string, string>;
  /** `user@realm!token` once the token was accepted; null before or without. */
  authid: string | null;
  /** 0 until answered (or never, when the node went down first). */
  status: number;
  /** Arrival, ms since the epoch. */
  at: number;
  /** When the answer was written (null: not answered). */
  answeredAt: number | null;
};

export type PowerFleetNodeFaults = {
  /** The next this many shutdown POSTs answer 500 and do nothing. */
  statusPostFailures: number;
  /** An accepted shutdown POST is answered this much later (the node goes down after that). */
  statusPostDelayMs: number;
};

export type PowerFleetNodeState = "up" | "going-down" | "down";

export type PowerFleetNode = {
  name: string;
  port: number;
  /** `https://127.0.0.1:<port>` */
  url: string;
  /** The console's token on this node. */
  token: { id: string; secret: string };
  faults: PowerFleetNodeFaults;
  readonly state: PowerFleetNodeState;
  /** When it last stopped listening (ms since the epoch); null while it has not. */
  readonly downAt: number | null;
  readonly requests: readonly PowerFleetRequest[];
  /** Lost power: stops listening at once, open connections cut. */
  powerOff(): Promise<void>;
  /** Booted: listens again on the same port. */
  powerOn(): Promise<void>;
};

export type StartPowerFleetOptions = {
  nodes: number;
  /** Node `i` (from 1) is `${prefix}${i}` zero-padded to the count's width. Default `pve`. */
  prefix?: string;
  /** Accepted shutdown → the node stops listening. Default 2000 (Proxmox's `sleep 2`). */
  downAfterMs?: number;
  /** A reboot: down → listening again. Default 5000. */
  rebootUpAfterMs?: number;
  /** Delay before a 401 for a wrong token. Default 3000. */
  authFailureDelayMs?: number;
  /** The token's id on every node. Default `clupilot@pve!console` (what onboarding creates). */
  tokenId?: string;
};

export type PowerFleet = {
  readonly nodes: readonly PowerFleetNode[];
  /** SHA-256 of the shared certificate (DER), `AB:CD:…`. */
  certSha256: string;
  certPem: string;
  /** Every node's requests in arrival order. */
  readonly requests: readonly PowerFleetRequest[];
  /** Every node up again with its faults cleared; the request logs are kept. */
  reset(): Promise<void>;
  stop(): Promise<void>;
};

export async function startPowerFleet(options: StartPowerFleetOptions): Promise<PowerFleet> {
  const count = options.nodes;
  if (!Number.isInteger(count) || count < 1) {
    throw new Error(`lab: a power fleet has at least one node, got ${String(count)}`);
  }
  const prefix = options.prefix ?? "pve";
  const downAfterMs = options.downAfterMs ?? 2000;
  const rebootUpAfterMs = options.rebootUpAfterMs ?? 5000;
  const authFailureDelayMs = options.authFailureDelayMs ?? 3000;
  const tokenId = options.tokenId ?? "clupilot@pve!console";
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "clupilot-power-fleet-"));
  const width = String(count).length;
  const nodes: FleetNodeImpl[] = [];
  const requests: PowerFleetRequest[] = [];
  const span = FLEET_PORTS.high - FLEET_PORTS.low + 1;
  let cursor = Math.floor(Math.random() * span);
  /** The next free port of the fleet's range, from a random start. */
  const listenFree = async (server: https.Server): Promise<number> => {
    for (let tries = 0; tries < span; tries++) {
      const port = FLEET_PORTS.low + (cursor++ % span);
      if (await listenOn(server, port)) return port;
    }
    throw new Error(`lab: no free port left in ${FLEET_PORTS.low}–${FLEET_PORTS.high}`);
  };
  try {
    const cert = loadOrCreateNodeCert(root, `${prefix}-fleet`);
    for (let i = 1; i <= count; i++) {
      const name = `${prefix}${String(i).padStart(width, "0")}`;
      const node = new FleetNodeImpl(name, cert, requests, {
        downAfterMs,
        rebootUpAfterMs,
        authFailureDelayMs,
        token: { id: tokenId, secret: randomUuid() },
      });
      nodes.push(node);
      await node.listen(listenFree);
    }
    const fleet: PowerFleet = {
      nodes,
      certSha256: cert.sha256,
      certPem: cert.cert,
      requests,
      reset: async () => {
        await Promise.all(
          nodes.map(async (node) => {
            node.faults.statusPostFailures = 0;
            node.faults.statusPostDelayMs = 0;
            await node.powerOn();
          }),
        );
      },
      stop: async () => {
        await Promise.all(nodes.map((node) => node.close()));
        fs.rmSync(root, { recursive: true, force: true });
      },
    };
    return fleet;
  } catch (error) {
    await Promise.all(nodes.map((node) => node.close().catch(() => {})));
    fs.rmSync(root, { recursive: true, force: true });
    throw error;
  }
}

/** A token secret as Proxmox makes them (a UUID). */
function randomUuid(): string {
  const b = randomBytes(16);
  b[6] = (b[6]! & 0x0f) | 0x40;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = b.toString("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

const NODE_RE = /^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?$/;

class FleetNodeImpl implements PowerFleetNode {
  port = 0;
  url = "";
  faults: PowerFleetNodeFaults = { statusPostFailures: 0, statusPostDelayMs: 0 };
  state: PowerFleetNodeState = "down";
  downAt: number | null = null;
  readonly requests: PowerFleetRequest[] = [];
  readonly token: { id: string; secret: string };
  private readonly server: https.Server;
  private readonly sockets = new Set<net.Socket>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private closed = false;

  constructor(
    readonly name: string,
    cert: { key: string; cert: string },
    private readonly fleetLog: PowerFleetRequest[],
    private readonly timing: {
      downAfterMs: number;
      rebootUpAfterMs: number;
      authFailureDelayMs: number;
      token: { id: string; secret: string };
    },
  ) {
    this.token = timing.token;
    this.server = https.createServer({ key: cert.key, cert: cert.cert }, (req, res) => {
      this.handle(req, res).catch(() => res.destroy());
    });
    this.server.on("connection", (socket: net.Socket) => {
      this.sockets.add(socket);
      socket.on("close", () => this.sockets.delete(socket));
    });
    this.server.on("tlsClientError", () => {});
  }

  async listen(listenFree: (server: https.Server) => Promise<number>): Promise<void> {
    this.port = await listenFree(this.server);
    this.url = `https://127.0.0.1:${this.port}`;
    this.state = "up";
  }

  private later(ms: number, what: () => void): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      what();
    }, ms);
    this.timers.add(timer);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => (ms <= 0 ? resolve() : this.later(ms, resolve)));
  }

  private send(
    res: http.ServerResponse,
    record: PowerFleetRequest,
    status: number,
    body: Record<string, unknown>,
    message?: string,
  ): void {
    record.status = status;
    if (res.destroyed) return;
    const text = JSON.stringify(body);
    res.writeHead(status, message ?? (status === 200 ? "OK" : undefined), {
      "Content-Type": "application/json;charset=UTF-8",
      "Content-Length": Buffer.byteLength(text),
      "Cache-Control": "max-age=0",
      Pragma: "no-cache",
      Server: "pve-api-daemon/3.0",
    });
    res.end(text);
    record.answeredAt = Date.now();
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const at = Date.now();
    const url = new URL(req.url ?? "/", "https://lab");
    const method = req.method ?? "GET";
    const body = await readBodyParams(req);
    const record: PowerFleetRequest = {
      node: this.name,
      method,
      path: url.pathname,
      body,
      authid: null,
      status: 0,
      at,
      answeredAt: null,
    };
    this.requests.push(record);
    this.fleetLog.push(record);
    const error = (status: number, message: string, errors?: Record<string, string>) =>
      this.send(
        res,
        record,
        status,
        { data: null, message: `${message}\n`, ...(errors ? { errors } : {}) },
        message.split("\n")[0],
      );

    const prefix = "/api2/json";
    if (!url.pathname.startsWith(`${prefix}/`)) {
      return this.send(res, record, 501, { data: null }, "Unsupported API format");
    }
    const apiPath = url.pathname.slice(prefix.length).replace(/\/+$/, "") || "/";
    const header = req.headers.authorization;
    if (header === undefined) return this.send(res, record, 401, { data: null }, "No ticket");
    const token = parseTokenHeader(header);
    if (token?.id !== this.token.id || token.secret !== this.token.secret) {
      await this.sleep(this.timing.authFailureDelayMs);
      return this.send(res, record, 401, { data: null }, "authentication failure");
    }
    record.authid = token.id;

    if (method === "GET" && apiPath === "/version") {
      const { version, release, repoid } = PVE_VERSION;
      return this.send(res, record, 200, { data: { version, release, repoid } });
    }
    const status = /^\/nodes\/([^/]+)\/status$/.exec(apiPath);
    if (method === "POST" && status) {
      const node = decodeURIComponent(status[1]!);
      if (!NODE_RE.test(node)) {
        return error(400, "Parameter verification failed.", {
          node: "invalid format - value does not look like a valid node name",
        });
      }
      if (node !== this.name && node !== "localhost") {
        return error(
          500,
          `hostname lookup '${node}' failed - failed to get address info for: ${node}: Name or service not known`,
        );
      }
      const unknown = Object.keys({ ...Object.fromEntries(url.searchParams), ...body }).filter(
        (k) => k !== "command",
      );
      if (unknown.length > 0) {
        return error(
          400,
          "Parameter verification failed.",
          Object.fromEntries(
            unknown.map((k) => [
              k,
              "property is not defined in schema and the schema does not allow additional properties",
            ]),
          ),
        );
      }
      const command = body.command ?? url.searchParams.get("command") ?? undefined;
      if (command !== "shutdown" && command !== "reboot") {
        return error(400, "Parameter verification failed.", {
          command:
            command === undefined
              ? "property is missing and it is not optional"
              : `value '${command}' does not have a value in the enumeration 'reboot, shutdown'`,
        });
      }
      if (this.faults.statusPostFailures > 0) {
        this.faults.statusPostFailures--;
        return error(500, "unable to read tail (got 0 bytes)");
      }
      // Acted on after the delay even if the client has gone: the node received the request.
      await this.sleep(this.faults.statusPostDelayMs);
      this.send(res, record, 200, { data: null });
      if (this.state === "up") {
        this.state = "going-down";
        this.later(this.timing.downAfterMs, () => {
          void this.powerOff().then(() => {
            if (command === "reboot")
              this.later(this.timing.rebootUpAfterMs, () => void this.powerOn());
          });
        });
      }
      return;
    }
    return error(501, `Method '${method} ${apiPath}' not implemented`);
  }

  async powerOff(): Promise<void> {
    if (this.state === "down") return;
    this.state = "down";
    this.downAt = Date.now();
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    const closing = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    await closing;
  }

  async powerOn(): Promise<void> {
    if (this.closed) return;
    if (this.state === "going-down") await this.powerOff();
    if (this.state === "up") return;
    const deadline = Date.now() + RETURN_WAIT_MS;
    while (!(await listenOn(this.server, this.port))) {
      if (Date.now() > deadline) {
        throw new Error(
          `lab: ${this.name} cannot listen on 127.0.0.1:${this.port} again; another process holds the port — see \`ss -tanp 'sport = :${this.port}'\``,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    this.state = "up";
    this.downAt = null;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.powerOff();
  }
}
