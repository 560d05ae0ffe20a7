import { timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";
import net from "node:net";
import { parentPort, workerData } from "node:worker_threads";
import vm from "node:vm";

import { enterArgs, NSENTER, type NamespaceEntry } from "../namespace/enter";
import type { Bind } from "../namespace/layout";
import { NodePaths } from "../namespace/node-paths";
import { FRAME, FrameReader, frame, parseRequest, type ToolRequest } from "./protocol";
import {
  BUNDLE_PARAMETERS,
  ToolCall,
  ToolExit,
  type CompiledBundle,
  type ToolNode,
} from "./tool-call";
import { entryOf, TOOL_ENTRIES, type ToolEntry } from "./tool-table";

/**
 * The tool server: a worker thread of the lab's process (started by lab/tool-server/index.ts),
 * listening on 127.0.0.1 for tool clients. Each connection is one run of one tool (ToolCall).
 * A thread of its own keeps what the tools do (synchronous file work, `Atomics.wait` while
 * waiting for a lock, their unhandled promise rejections) away from the lab's SSH and API
 * servers.
 */

type WorkerData = { tools: Record<ToolEntry, string> };

const { tools } = workerData as WorkerData;
/** The nodes whose SSH servers hold a lease, by their token (lab/tool-server/index.ts). */
const nodes = new Map<string, ToolNode>();
const compiled = new Map<ToolEntry, CompiledBundle>();
const callsByTool = new Map<string, number>();
/** A client that connected must send its request at once. */
const REQUEST_TIMEOUT_MS = 10_000;

function bundleOf(entry: ToolEntry): CompiledBundle {
  let bundle = compiled.get(entry);
  if (bundle === undefined) {
    bundle = vm.compileFunction(tools[entry], [...BUNDLE_PARAMETERS], {
      filename: `lab/${TOOL_ENTRIES[entry].replace(/\.ts$/, ".js")}`,
    }) as CompiledBundle;
    compiled.set(entry, bundle);
  }
  return bundle;
}

/** The node a token belongs to; compared in constant time, as a secret should be. */
function nodeOf(given: string): ToolNode | null {
  const buffer = Buffer.from(given);
  for (const [token, node] of nodes) {
    const expected = Buffer.from(token);
    if (buffer.length === expected.length && timingSafeEqual(buffer, expected)) return node;
  }
  return null;
}

function toolNode(binds: Bind[], entry: NamespaceEntry): ToolNode {
  return {
    paths: new NodePaths(binds),
    command: (argv, cwd) => ({ file: NSENTER, args: [...enterArgs(entry, cwd), ...argv] }),
  };
}

function start(request: ToolRequest, node: ToolNode, socket: net.Socket): ToolCall {
  const send = (type: string, payload?: Buffer | string) => {
    if (!socket.destroyed) socket.write(frame(type, payload));
  };
  const { entry, argv } = entryOf(request.tool, request.argv);
  callsByTool.set(request.tool, (callsByTool.get(request.tool) ?? 0) + 1);
  const call = new ToolCall(
    { argv, env: request.env, cwd: request.cwd, pid: request.pid, ppid: request.ppid },
    {
      stdout: (chunk) => send(FRAME.stdout, chunk),
      stderr: (chunk) => send(FRAME.stderr, chunk),
      wantStdin: () => send(FRAME.wantStdin),
      exit: (code) => {
        send(FRAME.exit, String(code));
        socket.end();
      },
    },
    node,
  );
  call.run(bundleOf(entry), `/usr/bin/${request.tool}`);
  return call;
}

function onConnection(socket: net.Socket): void {
  socket.setNoDelay(true);
  socket.on("error", () => {});
  const reader = new FrameReader();
  let call: ToolCall | null = null;
  const refuse = (message: string) => {
    socket.end(frame(FRAME.refused, message));
    socket.destroySoon();
  };
  const timer = setTimeout(() => socket.destroy(), REQUEST_TIMEOUT_MS);
  socket.on("data", (chunk: Buffer) => {
    let frames: ReturnType<FrameReader["push"]>;
    try {
      frames = reader.push(chunk);
    } catch (error) {
      refuse(error instanceof Error ? error.message : String(error));
      return;
    }
    for (const { type, payload } of frames) {
      if (call !== null) {
        if (type === FRAME.stdin) call.stdinData(payload);
        continue;
      }
      clearTimeout(timer);
      const request = type === FRAME.request ? parseRequest(payload) : null;
      if (request === null) return refuse("the tool server did not understand the request");
      const node = nodeOf(request.token);
      if (node === null)
        return refuse(
          "the tool server refused the request: it belongs to another lab, or to a node that stopped",
        );
      call = start(request, node, socket);
    }
  });
  socket.on("close", () => {
    clearTimeout(timer);
    call?.kill();
  });
}

// A tool's stray rejection or exception must not take the server (and every other run) down.
// ToolExit is how an ended run unwinds; anything else is a lab defect worth seeing.
for (const event of ["unhandledRejection", "uncaughtException"] as const) {
  process.on(event, (error: unknown) => {
    if (error instanceof ToolExit) return;
    process.stderr.write(
      `lab tool server: ${event} in a simulated tool: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
  });
}

/** CPU seconds of this thread alone (utime + stime of /proc/thread-self/stat). */
function threadCpuSeconds(): number {
  const fields = readFileSync("/proc/thread-self/stat", "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

type Message = {
  stats?: number;
  register?: number;
  token?: string;
  binds?: Bind[];
  entry?: NamespaceEntry;
  unregister?: string;
};

parentPort?.on("message", (message: Message) => {
  if (message.register !== undefined && message.token && message.binds && message.entry) {
    nodes.set(message.token, toolNode(message.binds, message.entry));
    parentPort?.postMessage({ registered: message.register });
    return;
  }
  if (message.unregister !== undefined) {
    nodes.delete(message.unregister);
    return;
  }
  // The benchmarks ask what the tools cost: calls per tool and this thread's CPU time.
  if (message.stats === undefined) return;
  parentPort?.postMessage({
    stats: message.stats,
    calls: Object.fromEntries(callsByTool),
    cpuSeconds: threadCpuSeconds(),
  });
});

const server = net.createServer(onConnection);
server.on("error", (error) => parentPort?.postMessage({ error: error.message }));
server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  parentPort?.postMessage({ port: typeof address === "object" && address ? address.port : 0 });
});
