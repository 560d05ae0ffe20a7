import { randomBytes } from "node:crypto";
import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";
import { Worker } from "node:worker_threads";

import type { NamespaceEntry } from "../namespace/enter";
import type { Bind } from "../namespace/layout";
import { buildToolBundles, type ToolBundles } from "./bundle";

/**
 * One tool server per lab process, shared by its nodes: a worker thread that runs the simulated
 * tools (`qm`, `apt-get`, `virt-customize`, …) for the clients on the nodes' PATH
 * (lab/tools/client), instead of a Node process per command. Each node's SSH server holds a
 * lease while it runs — the lease registers the node (its binds, the way into its namespace)
 * under a token of its own — and writes the server's address and that token into the node's
 * root (`.lab/tool-server`, read by the client); the thread ends with the last lease.
 */

export type ToolServerAddress = { port: number; token: string };

export type ToolServerLease = ToolServerAddress & { release(): Promise<void> };

/** What the server must know of a node to run its tools: how its paths map, how to enter it. */
export type ToolServerNode = { binds: readonly Bind[]; entry: NamespaceEntry };

type Running = { worker: Worker; port: number; leases: number };

let running: Promise<Running> | null = null;
/** The server `running` resolved to, for the decisions that must not wait. */
let current: Running | null = null;
/** Built once per lab process: a tool edited while it runs counts from its next start. */
let bundles: Promise<ToolBundles> | null = null;

async function startServer(): Promise<Running> {
  bundles ??= buildToolBundles().catch((error: unknown) => {
    bundles = null;
    throw error;
  });
  const { worker: code, tools } = await bundles;
  const worker = new Worker(code, { eval: true, workerData: { tools } });
  // The lab's own servers decide when the process ends, not this thread.
  worker.unref();
  // One "message" and one "exit" listener per answer still awaited, each removed once answered:
  // as many as nodes register at once (a bench starts 50), not a leak.
  worker.setMaxListeners(0);
  const port = await new Promise<number>((resolve, reject) => {
    worker.once("message", (message: { port?: number; error?: string }) =>
      message.port
        ? resolve(message.port)
        : reject(new Error(`lab: the tool server could not listen: ${message.error ?? "no port"}`)),
    );
    worker.once("error", reject);
    worker.once("exit", (code) =>
      reject(new Error(`lab: the tool server ended at start (exit ${code})`)),
    );
  });
  const state: Running = { worker, port, leases: 0 };
  worker.on("error", (error) => {
    process.stderr.write(`lab: the tool server failed: ${error.stack ?? error.message}\n`);
  });
  worker.on("exit", () => {
    // The next lease starts a new one; clients of the old one say it does not answer.
    if (current === state) {
      current = null;
      running = null;
    }
  });
  current = state;
  return state;
}

let registrations = 0;

/** Registers the node with the lab's tool server (started if none runs) under a new token. */
export async function acquireToolServer(node: ToolServerNode): Promise<ToolServerLease> {
  running ??= startServer().catch((error: unknown) => {
    running = null;
    throw error;
  });
  const state = await running;
  state.leases++;
  const token = randomBytes(24).toString("hex");
  const id = ++registrations;
  try {
    await new Promise<void>((resolve, reject) => {
      // Both listeners go once answered: every node's boot registers, and a lab of many nodes
      // rebooting for an hour would otherwise pile them up on the one thread.
      const onExit = () => {
        state.worker.off("message", onMessage);
        reject(new Error("lab: the tool server ended"));
      };
      const onMessage = (message: { registered?: number }) => {
        if (message.registered !== id) return;
        state.worker.off("message", onMessage);
        state.worker.off("exit", onExit);
        resolve();
      };
      state.worker.on("message", onMessage);
      state.worker.once("exit", onExit);
      state.worker.postMessage({ register: id, token, binds: node.binds, entry: node.entry });
    });
  } catch (error) {
    state.leases--;
    throw error;
  }
  let released = false;
  return {
    port: state.port,
    token,
    async release() {
      if (released) return;
      released = true;
      state.leases--;
      state.worker.postMessage({ unregister: token });
      if (state.leases > 0) return;
      if (current === state) {
        current = null;
        running = null;
      }
      await state.worker.terminate();
    },
  };
}

export type ToolServerStats = {
  /** Calls per tool name since the server started. */
  calls: Record<string, number>;
  /** CPU seconds of the server's thread since it started (tool runs included). */
  cpuSeconds: number;
};

let statsRequests = 0;

/** What the running tool server has done so far; null when none runs. */
export async function toolServerStats(): Promise<ToolServerStats | null> {
  const state = current;
  if (state === null) return null;
  const id = ++statsRequests;
  return new Promise((resolve) => {
    const onExit = () => {
      state.worker.off("message", onMessage);
      resolve(null);
    };
    const onMessage = (message: { stats?: number } & Partial<ToolServerStats>) => {
      if (message.stats !== id) return;
      state.worker.off("message", onMessage);
      state.worker.off("exit", onExit);
      resolve({ calls: message.calls ?? {}, cpuSeconds: message.cpuSeconds ?? 0 });
    };
    state.worker.on("message", onMessage);
    state.worker.once("exit", onExit);
    state.worker.postMessage({ stats: id });
  });
}

/** Where a node's tool clients find the server: `<root>/.lab/tool-server` ("port token"). */
export function writeToolServerAddress(root: string, address: ToolServerAddress): void {
  const file = path.join(root, ".lab", "tool-server");
  mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${address.port} ${address.token}\n`, { mode: 0o600 });
  renameSync(tmp, file);
}
