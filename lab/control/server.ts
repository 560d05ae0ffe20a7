import http from "node:http";

import { z } from "zod";

import type { ControlCluster, ControlPbs } from "./cluster";
import {
  renderControlPage,
  type ControlNodeState,
  type ControlUpsState,
  type PartState,
} from "./page";
import type { SwitchRegistry } from "./switches";

/**
 * The lab's control server on 127.0.0.1: a JSON API and a small page to see the nodes and flip
 * their fault switches.
 *
 *   GET  /                                  the page
 *   GET  /api/nodes                         { nodes: [state] }
 *   GET  /api/nodes/:name                   state
 *   PUT  /api/nodes/:name/faults            { "<switch>": value, … } → state | 400 { fieldErrors }
 *   POST /api/nodes/:name/actions/:action   runs it → state
 *   GET  /api/ups                           { ups: [state] } (lab UPS devices, when started)
 *   GET  /api/ups/:name                     state
 *   PUT  /api/ups/:name/faults              as for nodes
 *   POST /api/ups/:name/actions/:action     as for nodes
 *   GET  /api/cluster                       the lab cluster's state (404 when none started)
 *   PUT  /api/cluster/faults                as for nodes (`cluster.*` switches)
 *   POST /api/cluster/actions/:action       as for nodes (`cluster.<node>.powerOff|powerOn`)
 *   GET  /api/pbs                           the lab backup server's state (404 when none)
 *   PUT  /api/pbs/faults, POST /api/pbs/actions/:action
 *
 * Changing requests must be `application/json` (a browser page elsewhere cannot send that
 * without a CORS preflight, which is never answered) and the Host header must name this server
 * (no DNS rebinding): the lab runs on a person's laptop.
 */

export type ControlNode = {
  name: string;
  root: string;
  ssh: {
    host: string;
    port: number;
    username: string;
    password: string;
    hostKeySha256: string;
  };
  /** Present once the node serves the Proxmox-shaped API (with what it received). */
  api?: { url: string; certSha256: string; requests?: readonly LabApiRequest[] };
  /** The node's power as the lab sees it: what a black-box check counts against. */
  power?: { readonly state: string };
  switches: SwitchRegistry;
};

/** One request the node's API received, as the control API reports it. */
type LabApiRequest = {
  method: string;
  path: string;
  body: Record<string, string>;
  authid: string | null;
  status: number;
  at: Date;
};

/** A lab UPS on the control page: its endpoints, its power now and its switches. */
export type ControlUps = {
  name: string;
  /** NUT and SNMP endpoints with credentials, as `npm run lab` prints them. */
  endpoints: Record<string, unknown>;
  /** The power state now (mains, charge, runtime, …). */
  power(): Record<string, unknown>;
  switches: SwitchRegistry;
};

export type ControlServer = {
  url: string;
  port: number;
  stop(): Promise<void>;
};

export type ControlServerOptions = {
  /** The nodes, read on every request (a fleet may change). */
  nodes: () => readonly ControlNode[];
  /** Lab UPS devices (lab/ups), read on every request. Default: none. */
  ups?: () => readonly ControlUps[];
  /** The lab cluster (`--cluster`), if started. */
  cluster?: ControlCluster | null;
  /** The lab Proxmox Backup Server (`--pbs`), if started. */
  pbs?: ControlPbs | null;
  /** Default: a random free port. */
  port?: number;
};

const MAX_BODY_BYTES = 64 * 1024;

const faultsBody = z.record(z.string(), z.unknown());

export function nodeState(node: ControlNode): ControlNodeState {
  return {
    name: node.name,
    root: node.root,
    ssh: {
      host: node.ssh.host,
      port: node.ssh.port,
      username: node.ssh.username,
      password: node.ssh.password,
      hostKeySha256: node.ssh.hostKeySha256,
    },
    ...(node.api === undefined
      ? {}
      : { api: { url: node.api.url, certSha256: node.api.certSha256 } }),
    ...(node.power === undefined ? {} : { power: node.power.state }),
    // The shutdowns the node itself received (tests count calls here, never in the console's
    // own records): answered or not, in order.
    shutdownRequests: (node.api?.requests ?? [])
      .filter(
        (r) =>
          r.method === "POST" &&
          /\/nodes\/[^/]+\/status$/.test(r.path) &&
          r.body.command === "shutdown",
      )
      .map((r) => ({ at: r.at.toISOString(), status: r.status, authid: r.authid })),
    switches: node.switches.list(),
    actions: node.switches.listActions(),
  };
}

/** The lab cluster's or backup server's state with its switches, for the page. */
function partState<S>(part: { state(): S; switches: SwitchRegistry }): PartState<S> {
  return {
    state: part.state(),
    switches: part.switches.list(),
    actions: part.switches.listActions(),
  };
}

export function upsState(ups: ControlUps): ControlUpsState {
  return {
    name: ups.name,
    endpoints: ups.endpoints,
    power: ups.power(),
    switches: ups.switches.list(),
    actions: ups.switches.listActions(),
  };
}

export async function startControlServer(options: ControlServerOptions): Promise<ControlServer> {
  let port = 0;
  const server = http.createServer((request, response) => {
    handle(request, response, options, port).catch((error: unknown) => {
      if (!response.headersSent) {
        send(response, 500, { error: error instanceof Error ? error.message : String(error) });
      } else response.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, "127.0.0.1", () => {
      server.removeListener("error", reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("lab: no TCP address");
  port = address.port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function handle(
  request: http.IncomingMessage,
  response: http.ServerResponse,
  options: ControlServerOptions,
  port: number,
): Promise<void> {
  const host = request.headers.host ?? "";
  if (host !== `127.0.0.1:${port}` && host !== `localhost:${port}`) {
    send(response, 403, { error: `unexpected Host header ${JSON.stringify(host)}` });
    return;
  }
  const url = new URL(request.url ?? "/", `http://127.0.0.1:${port}`);
  const parts = url.pathname.split("/").filter((part) => part !== "");
  const method = request.method ?? "GET";
  const nodes = options.nodes();

  if (parts.length === 0) {
    if (method !== "GET") return methodNotAllowed(response, "GET");
    response.writeHead(200, {
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-store",
      "content-security-policy":
        "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'",
      "x-frame-options": "DENY",
    });
    response.end(
      renderControlPage(nodes.map(nodeState), (options.ups?.() ?? []).map(upsState), {
        cluster: options.cluster ? partState(options.cluster) : null,
        pbs: options.pbs ? partState(options.pbs) : null,
      }),
    );
    return;
  }
  if (parts[0] === "api" && (parts[1] === "cluster" || parts[1] === "pbs")) {
    const part = parts[1] === "cluster" ? options.cluster : options.pbs;
    if (!part) {
      send(response, 404, { error: `no lab ${parts[1]} was started` });
      return;
    }
    // The same paths as a node's, one level up: /api/cluster/faults, /api/cluster/actions/:a.
    const rest = ["api", parts[1], parts[1], ...parts.slice(2)];
    if (rest.length === 3) {
      if (method !== "GET") return methodNotAllowed(response, "GET");
      send(response, 200, part.state());
      return;
    }
    const outcome = await handleSwitches(request, response, rest, parts[1], part.switches);
    if (outcome === "changed") send(response, 200, part.state());
    else if (outcome === "not-a-switch-path") send(response, 404, { error: "not found" });
    return;
  }
  if (parts[0] === "api" && parts[1] === "ups") {
    await handleUps(request, response, parts, options.ups?.() ?? []);
    return;
  }
  if (parts[0] !== "api" || parts[1] !== "nodes") {
    send(response, 404, { error: "not found" });
    return;
  }
  if (parts.length === 2) {
    if (method !== "GET") return methodNotAllowed(response, "GET");
    send(response, 200, { nodes: nodes.map(nodeState) });
    return;
  }
  const name = decodeURIComponent(parts[2] ?? "");
  const node = nodes.find((candidate) => candidate.name === name);
  if (node === undefined) {
    send(response, 404, { error: `no node named ${JSON.stringify(name)}` });
    return;
  }
  if (parts.length === 3) {
    if (method !== "GET") return methodNotAllowed(response, "GET");
    send(response, 200, nodeState(node));
    return;
  }
  const outcome = await handleSwitches(request, response, parts, node.name, node.switches);
  if (outcome === "changed") send(response, 200, nodeState(node));
  else if (outcome === "not-a-switch-path") send(response, 404, { error: "not found" });
}

async function handleUps(
  request: http.IncomingMessage,
  response: http.ServerResponse,
  parts: readonly string[],
  devices: readonly ControlUps[],
): Promise<void> {
  const method = request.method ?? "GET";
  if (parts.length === 2) {
    if (method !== "GET") return methodNotAllowed(response, "GET");
    send(response, 200, { ups: devices.map(upsState) });
    return;
  }
  const name = decodeURIComponent(parts[2] ?? "");
  const ups = devices.find((candidate) => candidate.name === name);
  if (ups === undefined) {
    send(response, 404, { error: `no UPS named ${JSON.stringify(name)}` });
    return;
  }
  if (parts.length === 3) {
    if (method !== "GET") return methodNotAllowed(response, "GET");
    send(response, 200, upsState(ups));
    return;
  }
  const outcome = await handleSwitches(request, response, parts, ups.name, ups.switches);
  if (outcome === "changed") send(response, 200, upsState(ups));
  else if (outcome === "not-a-switch-path") send(response, 404, { error: "not found" });
}

/**
 * `PUT …/faults` and `POST …/actions/:action` on one switch registry (a node's or a UPS's).
 * `changed`: the caller answers with the new state; `answered`: an error was answered here.
 */
async function handleSwitches(
  request: http.IncomingMessage,
  response: http.ServerResponse,
  parts: readonly string[],
  owner: string,
  switches: SwitchRegistry,
): Promise<"changed" | "answered" | "not-a-switch-path"> {
  const method = request.method ?? "GET";
  if (parts.length === 4 && parts[3] === "faults") {
    if (method !== "PUT") {
      methodNotAllowed(response, "PUT");
      return "answered";
    }
    const body = await readJson(request, response);
    if (body === undefined) return "answered";
    const parsed = faultsBody.safeParse(body);
    if (!parsed.success) {
      send(response, 400, {
        error: "the body must be a JSON object of switch names and values",
        formErrors: parsed.error.issues.map((issue) => issue.message),
        fieldErrors: {},
      });
      return "answered";
    }
    const result = await switches.apply(parsed.data);
    if (!result.ok) {
      send(response, 400, {
        error: "invalid switches; nothing was changed",
        fieldErrors: result.fieldErrors,
        formErrors: result.formErrors,
      });
      return "answered";
    }
    return "changed";
  }
  if (parts.length === 5 && parts[3] === "actions") {
    if (method !== "POST") {
      methodNotAllowed(response, "POST");
      return "answered";
    }
    const action = decodeURIComponent(parts[4] ?? "");
    if (!switches.hasAction(action)) {
      send(response, 404, { error: `no action ${JSON.stringify(action)} on ${owner}` });
      return "answered";
    }
    if ((await readJson(request, response)) === undefined) return "answered";
    await switches.run(action);
    return "changed";
  }
  return "not-a-switch-path";
}

/** The parsed JSON body, or undefined after answering 4xx. An empty body is `{}`. */
async function readJson(
  request: http.IncomingMessage,
  response: http.ServerResponse,
): Promise<unknown> {
  const type = (request.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase();
  if (type !== "application/json") {
    send(response, 415, { error: "send Content-Type: application/json" });
    return undefined;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) {
      send(response, 413, { error: `the body exceeds ${MAX_BODY_BYTES} bytes` });
      request.destroy();
      return undefined;
    }
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString("utf8");
  if (text.trim() === "") return {};
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    send(response, 400, {
      error: `the body is not JSON: ${error instanceof Error ? error.message : String(error)}`,
      fieldErrors: {},
      formErrors: ["invalid JSON"],
    });
    return undefined;
  }
}

function methodNotAllowed(response: http.ServerResponse, allow: string): void {
  response.setHeader("allow", allow);
  send(response, 405, { error: `use ${allow}` });
}

function send(response: http.ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "cache-control": "no-store",
  });
  response.end(`${JSON.stringify(body, null, 2)}\n`);
}
