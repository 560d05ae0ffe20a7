import http from "node:http";
import type { AddressInfo, Socket } from "node:net";

/** How the receiver answers a delivery: 200, 500, or never (the request hangs until closed). */
export type ReceiverMode = "ok" | "fail" | "hang";

export type ReceivedRequest = {
  seq: number;
  at: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  /** The status it was answered with; null while (or because) it hung. */
  answered: number | null;
};

export type WebhookReceiver = {
  readonly port: number;
  /** `http://127.0.0.1:PORT/path`. */
  url(path?: string): string;
  /** What arrived, in order; only at `path` when given. */
  received(path?: string): ReceivedRequest[];
  /** How to answer from now on, everywhere or at one path. */
  setMode(mode: ReceiverMode, path?: string): void;
  /** Answer the next `count` requests (at `path`, or anywhere) with 500, then as the mode says. */
  failNext(count: number, path?: string): void;
  /** Stops listening (connections are refused), keeping what it received and its port. */
  down(): Promise<void>;
  /** Listens again on the same port. */
  up(): Promise<void>;
  isUp(): boolean;
  /** Resolves once `count` requests arrived (at `path`); rejects after `timeoutMs`. */
  waitFor(
    count: number,
    options?: { path?: string; timeoutMs?: number },
  ): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
};

/** Control paths a person (or a script) can use on a running receiver; never recorded. */
export const CONTROL_PREFIX = "/_receiver";

/**
 * The lab's webhook receiver: records every POST per path and answers as told (200, 500, hang,
 * or not at all while down). For tests (startWebhookReceiver) and for a person (main.ts, `npm run
 * lab:receiver`). Listens on 127.0.0.1 only.
 */
export async function startWebhookReceiver(
  options: { port?: number; onRequest?: (request: ReceivedRequest) => void } = {},
): Promise<WebhookReceiver> {
  const requests: ReceivedRequest[] = [];
  const modes = new Map<string, ReceiverMode>();
  const failCounts = new Map<string, number>();
  const hanging = new Set<http.ServerResponse>();
  const sockets = new Set<Socket>();
  const waiters = new Set<() => void>();
  let seq = 0;

  const modeFor = (path: string): ReceiverMode => modes.get(path) ?? modes.get("*") ?? "ok";
  const takeFailure = (path: string): boolean => {
    for (const key of [path, "*"]) {
      const left = failCounts.get(key) ?? 0;
      if (left > 0) {
        failCounts.set(key, left - 1);
        return true;
      }
    }
    return false;
  };

  const handle = (req: http.IncomingMessage, res: http.ServerResponse, body: string) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (url.pathname.startsWith(CONTROL_PREFIX)) return control(req, res, url);
    const record: ReceivedRequest = {
      seq: ++seq,
      at: new Date().toISOString(),
      method: req.method ?? "GET",
      path: url.pathname,
      headers: Object.fromEntries(
        Object.entries(req.headers).map(([k, v]) => [
          k,
          Array.isArray(v) ? v.join(", ") : (v ?? ""),
        ]),
      ),
      body,
      answered: null,
    };
    requests.push(record);
    const mode = takeFailure(record.path) ? "fail" : modeFor(record.path);
    if (mode === "hang") {
      hanging.add(res);
      res.on("close", () => hanging.delete(res));
    } else {
      record.answered = mode === "fail" ? 500 : 200;
      res.writeHead(record.answered, { "content-type": "text/plain" });
      res.end(mode === "fail" ? "lab receiver told to fail\n" : "ok\n");
    }
    options.onRequest?.(record);
    for (const wake of [...waiters]) wake();
  };

  const control = (req: http.IncomingMessage, res: http.ServerResponse, url: URL) => {
    const path = url.searchParams.get("path") ?? undefined;
    const reply = (status: number, payload: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(`${JSON.stringify(payload, null, 2)}\n`);
    };
    const action = url.pathname.slice(CONTROL_PREFIX.length);
    if (req.method === "GET" && (action === "" || action === "/")) {
      return reply(200, { received: receiver.received(path) });
    }
    if (req.method === "POST" && action === "/mode") {
      const mode = url.searchParams.get("mode");
      if (mode !== "ok" && mode !== "fail" && mode !== "hang") {
        return reply(400, { error: "mode must be ok, fail or hang" });
      }
      receiver.setMode(mode, path);
      return reply(200, { mode, path: path ?? "*" });
    }
    if (req.method === "POST" && action === "/fail-next") {
      const count = Number(url.searchParams.get("count") ?? "1");
      if (!Number.isInteger(count) || count < 0)
        return reply(400, { error: "count: a whole number" });
      receiver.failNext(count, path);
      return reply(200, { failNext: count, path: path ?? "*" });
    }
    return reply(404, {
      error: `GET ${CONTROL_PREFIX}[?path=], POST ${CONTROL_PREFIX}/mode?mode=ok|fail|hang[&path=], POST ${CONTROL_PREFIX}/fail-next?count=N[&path=]`,
    });
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => handle(req, res, Buffer.concat(chunks).toString("utf8")));
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  let listening = false;
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => {
        server.off("error", reject);
        listening = true;
        resolve((server.address() as AddressInfo).port);
      });
    });
  const stop = () =>
    new Promise<void>((resolve) => {
      if (!listening) return resolve();
      listening = false;
      for (const res of hanging) res.destroy();
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    });
  const port = await listen(options.port ?? 0);

  const receiver: WebhookReceiver = {
    port,
    url: (path = "/") => `http://127.0.0.1:${port}${path.startsWith("/") ? path : `/${path}`}`,
    received: (path) => requests.filter((r) => path === undefined || r.path === path),
    setMode(mode, path = "*") {
      modes.set(path, mode);
    },
    failNext(count, path = "*") {
      failCounts.set(path, count);
    },
    down: stop,
    async up() {
      if (!listening) await listen(port);
    },
    isUp: () => listening,
    waitFor(count, { path, timeoutMs = 30_000 } = {}) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const got = receiver.received(path);
          if (got.length < count) return false;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(got);
          return true;
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(
            new Error(
              `lab webhook receiver: ${receiver.received(path).length} of ${count} requests at ${path ?? "any path"} after ${timeoutMs} ms`,
            ),
          );
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    close: stop,
  };
  return receiver;
}
