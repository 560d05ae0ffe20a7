import type http from "node:http";
import https from "node:https";
import type net from "node:net";

import { isInstalled } from "../debian/dpkg-status";
import { listenKeepingPort } from "../listen-port";
import { USERID_RE, TOKENID_RE, readTokenSecrets, readUserCfg } from "./access";
import { loadOrCreateNodeCert, servedCert } from "./cert";
import { ApiError, dispatch, type Route } from "./routes";
import { createPmxcfs } from "./seed";
import { nodeName, pveInstalled } from "./state";

/**
 * The simulated Proxmox VE API: HTTPS on 127.0.0.1 with the node's self-signed certificate,
 * `/api2/json/…` answered from the lab root's state (the same files the simulated tools write),
 * API-token authentication with Proxmox's header and privilege separation. Until Proxmox VE is
 * installed on the node (dpkg status), connections are cut at once, as nothing listens on 8006.
 */

export type PveApiFaults = {
  /** `GET /nodes/{node}/qemu` answers 502 Bad Gateway (an HTML body, as a proxy sends it). */
  vmList502: boolean;
  /** `GET /nodes/{node}/qemu` never answers. */
  vmListHang: boolean;
  /** `GET …/qemu/{vmid}/config` answers 500 for these VMIDs even though they exist. */
  config500Vmids: number[];
  /** Message of that 500; null = Proxmox's "does not exist" text (the indistinguishable case). */
  config500Message: string | null;
  /** Every request is answered this much later. */
  delayMs: number;
  /** `POST /nodes/{node}/status` (shutdown, reboot) never answers and does nothing. */
  statusPostHang: boolean;
  /**
   * `POST /nodes/{node}/status` is acted on and answered this much later (0: at once). A client
   * that gave up meanwhile does not stop it: the node received the request.
   */
  statusPostDelayMs: number;
  /** The next this many `POST /nodes/{node}/status` answer 500 and do nothing. */
  statusPostFailures: number;
  /**
   * While true, `POST /nodes/{node}/status` waits; set false (`releaseHeldStatusPosts`), the
   * held ones are acted on and answered. A test's way to hold a call in flight exactly as long
   * as it needs, instead of for a guessed time.
   */
  statusPostHeld: boolean;
};

export type PveApiRequest = {
  method: string;
  path: string;
  query: Record<string, string>;
  /** Parameters of a POST/PUT body (form-encoded or JSON), as Proxmox reads them. */
  body: Record<string, string>;
  authid: string | null;
  status: number;
  at: Date;
};

export type StartPveApiOptions = {
  root: string;
  /** Default: the root's `etc/hostname`. */
  node?: string;
  /** Default: a random free port. */
  port?: number;
  /** Delay before a 401 for bad credentials; Proxmox waits ~3 s. Default 3000. */
  authFailureDelayMs?: number;
  faults?: Partial<PveApiFaults>;
  /** Routes matched before the single-node table: a lab cluster's (lab/pve/cluster). */
  routes?: readonly Route[];
};

export type PveApi = {
  url: string;
  port: number;
  /** SHA-256 fingerprint of the certificate (DER), `AB:CD:…`. */
  certSha256: string;
  /** The certificate in PEM, for clients that want to trust it rather than pin it. */
  certPem: string;
  faults: PveApiFaults;
  /** Turns `statusPostHeld` off and lets the held requests go on. */
  releaseHeldStatusPosts(): void;
  authFailureDelayMs: number;
  readonly requests: readonly PveApiRequest[];
  /** The node lost power: nothing listens any more (connections refused), open ones are cut. */
  powerOff(): Promise<void>;
  /**
   * The node booted: the API listens again on the same port, with the certificate /etc/pve
   * holds now (the same one unless an operator installed their own meanwhile).
   */
  powerOn(): Promise<void>;
  stop(): Promise<void>;
};

export function defaultPveApiFaults(): PveApiFaults {
  return {
    vmList502: false,
    vmListHang: false,
    config500Vmids: [],
    config500Message: null,
    delayMs: 0,
    statusPostHang: false,
    statusPostDelayMs: 0,
    statusPostFailures: 0,
    statusPostHeld: false,
  };
}

const BAD_GATEWAY_HTML =
  "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n";

/** Parses `PVEAPIToken=user@realm!tokenid=<secret>`. */
export function parseTokenHeader(
  header: string | undefined,
): { id: string; secret: string } | null {
  if (header === undefined) return null;
  const m = /^PVEAPIToken=(\S+?)!(\S+?)=(\S+)$/.exec(header.trim());
  if (!m || !USERID_RE.test(m[1]!) || !TOKENID_RE.test(m[2]!)) return null;
  return { id: `${m[1]}!${m[2]}`, secret: m[3]! };
}

function authenticate(root: string, header: string | undefined): string | null {
  const token = parseTokenHeader(header);
  if (token === null) return null;
  const cfg = readUserCfg(root);
  const entry = cfg.tokens.find((t) => t.id === token.id);
  const user = cfg.users.find((u) => u.userid === token.id.split("!")[0]);
  const now = Math.floor(Date.now() / 1000);
  if (!entry || !user || !user.enable) return null;
  if ((entry.expire > 0 && entry.expire < now) || (user.expire > 0 && user.expire < now))
    return null;
  return readTokenSecrets(root).get(token.id) === token.secret ? token.id : null;
}

export async function startPveApi(options: StartPveApiOptions): Promise<PveApi> {
  const { root } = options;
  const node = options.node ?? nodeName(root);
  // A root seeded before the certificate lived in /etc/pve gets it there now (same bytes); an
  // operator's own certificate (`pveproxy-ssl.pem`) is served instead, as pveproxy does.
  const certOf = () =>
    pveInstalled(root) ? servedCert(root, node) : loadOrCreateNodeCert(root, node);
  let cert = certOf();
  const faults: PveApiFaults = { ...defaultPveApiFaults(), ...options.faults };
  const requests: PveApiRequest[] = [];
  const held = new Set<() => void>();
  const sockets = new Set<net.Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      if (ms <= 0) return resolve();
      const t = setTimeout(() => {
        timers.delete(t);
        resolve();
      }, ms);
      timers.add(t);
    });

  const api: PveApi = {
    url: "",
    port: 0,
    certSha256: cert.sha256,
    certPem: cert.cert,
    faults,
    releaseHeldStatusPosts: () => {
      faults.statusPostHeld = false;
      for (const go of held) go();
      held.clear();
    },
    authFailureDelayMs: options.authFailureDelayMs ?? 3000,
    requests,
    powerOff: async () => {},
    powerOn: async () => {},
    stop: async () => {},
  };

  const send = (
    res: http.ServerResponse,
    status: number,
    body: Record<string, unknown>,
    message?: string,
  ) => {
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
  };

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse) => {
    const url = new URL(req.url ?? "/", "https://lab");
    const method = req.method ?? "GET";
    const query = Object.fromEntries(url.searchParams);
    const body = await readBodyParams(req);
    const record: PveApiRequest = {
      method,
      path: url.pathname,
      query,
      body,
      authid: null,
      status: 0,
      at: new Date(),
    };
    requests.push(record);
    const finish = (status: number) => (record.status = status);

    await sleep(faults.delayMs);
    const prefix = "/api2/json";
    if (!url.pathname.startsWith(`${prefix}/`)) {
      finish(501);
      return send(res, 501, { data: null }, "Unsupported API format");
    }
    const apiPath = url.pathname.slice(prefix.length).replace(/\/+$/, "") || "/";

    const header = req.headers.authorization;
    if (header === undefined) {
      finish(401);
      return send(res, 401, { data: null }, "No ticket");
    }
    const authid = authenticate(root, header);
    if (authid === null) {
      await sleep(api.authFailureDelayMs);
      finish(401);
      return send(res, 401, { data: null }, "authentication failure");
    }
    record.authid = authid;

    if (method === "GET" && /^\/nodes\/[^/]+\/qemu$/.test(apiPath)) {
      if (faults.vmListHang) return; // never answered; the socket is closed on stop()
      if (faults.vmList502) {
        finish(502);
        res.writeHead(502, "Bad Gateway", { "Content-Type": "text/html" });
        return res.end(BAD_GATEWAY_HTML);
      }
    }
    if (method === "POST" && /^\/nodes\/[^/]+\/status$/.test(apiPath)) {
      if (faults.statusPostHang) return; // never answered; the socket is closed on power off
      if (faults.statusPostFailures > 0) {
        faults.statusPostFailures--;
        finish(500);
        const message = "unable to read tail (got 0 bytes)";
        return send(res, 500, { data: null, message: `${message}\n` }, message);
      }
      if (faults.statusPostHeld) await new Promise<void>((resolve) => held.add(resolve));
      // Acted on after the delay even if the client has gone (a timer cleared by power off
      // never fires: a node that lost power does nothing more).
      await sleep(faults.statusPostDelayMs);
    }
    const configMatch = /^\/nodes\/[^/]+\/qemu\/(\d+)\/config$/.exec(apiPath);
    if (method === "GET" && configMatch && faults.config500Vmids.includes(Number(configMatch[1]))) {
      const message =
        faults.config500Message ??
        `Configuration file 'nodes/${node}/qemu-server/${configMatch[1]}.conf' does not exist`;
      finish(500);
      return send(res, 500, { data: null, message: `${message}\n` }, message.split("\n")[0]);
    }

    try {
      if (!pveInstalled(root)) createPmxcfs(root, { node });
      // A handler may answer later (the wake-on-LAN send): its promise is awaited.
      const data: unknown = await dispatch(
        { root, node, authid },
        method,
        apiPath,
        { ...query, ...body },
        options.routes,
      );
      finish(200);
      send(res, 200, { data: data ?? null });
    } catch (error) {
      if (error instanceof ApiError) {
        finish(error.status);
        const body: Record<string, unknown> = { data: null, message: `${error.message}\n` };
        if (error.errors) body.errors = error.errors;
        return send(res, error.status, body, error.message);
      }
      finish(500);
      const message = error instanceof Error ? error.message : String(error);
      send(res, 500, { data: null, message: `${message}\n` }, message);
    }
  };

  const server = https.createServer({ key: cert.key, cert: cert.cert }, (req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  server.on("connection", (socket: net.Socket) => {
    if (!isInstalled(root, "pve-manager") && !isInstalled(root, "proxmox-ve")) {
      socket.destroy(); // nothing listens on 8006 before Proxmox VE is installed
      return;
    }
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  server.on("tlsClientError", () => {});

  const close = async () => {
    for (const t of timers) clearTimeout(t);
    timers.clear();
    for (const s of sockets) s.destroy();
    sockets.clear();
    if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  api.port = await listenKeepingPort(server, options.port ?? 0, "127.0.0.1");
  api.url = `https://127.0.0.1:${api.port}`;
  api.powerOff = close;
  api.powerOn = async () => {
    if (server.listening) return;
    // pveproxy starts again: it serves the certificate /etc/pve holds now.
    cert = certOf();
    server.setSecureContext({ key: cert.key, cert: cert.cert });
    api.certSha256 = cert.sha256;
    api.certPem = cert.cert;
    await listenKeepingPort(server, api.port, "127.0.0.1", { returns: true });
  };
  api.stop = close;
  return api;
}

/**
 * A POST/PUT body's parameters, as Proxmox's API server reads them: form-encoded (what `curl -d`
 * and most clients send) or JSON. Other methods and other bodies carry none.
 */
export async function readBodyParams(req: http.IncomingMessage): Promise<Record<string, string>> {
  if (req.method !== "POST" && req.method !== "PUT") return {};
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  if (!text) return {};
  if ((req.headers["content-type"] ?? "").startsWith("application/json")) {
    const parsed = JSON.parse(text) as Record<string, unknown>;
    return Object.fromEntries(Object.entries(parsed).map(([k, v]) => [k, String(v)]));
  }
  // A repeated key is an array parameter (`vms=100&vms=101`): joined as Proxmox's lists are.
  const params: Record<string, string> = {};
  for (const [key, value] of new URLSearchParams(text)) {
    params[key] = key in params ? `${params[key]},${value}` : value;
  }
  return params;
}
