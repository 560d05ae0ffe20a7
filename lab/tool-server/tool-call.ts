import childProcess from "node:child_process";
import { Console } from "node:console";
import { EventEmitter } from "node:events";
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { Readable, Writable } from "node:stream";

import type { NodePaths } from "../namespace/node-paths";
import { pathArguments, readOnlyError, RETURNS_PATH } from "./fs-calls";

/**
 * One run of a simulated tool inside the tool server, seen by the tool as the process it used to
 * be: its own `process` (argv, env, pid and ppid of the client, cwd, exit, exitCode, stdin,
 * stdout, stderr), its own module state (the bundle's body runs anew for each call), its paths
 * in the node's view (relative ones from the client's cwd, every one through the node's mount
 * namespace, see ToolNode), its children inside the node, and an end like a process's: at `process.exit`, at an
 * uncaught exception (stack on stderr, code 1), or when nothing it started is pending any more
 * (timers, fs callbacks and promises, stdin being read, child processes), with `process.exitCode`.
 * After its end — or once the client is gone — every effect it tries (file system, output,
 * timers, children) throws ToolExit instead, as nothing runs after a process's exit.
 */

export type ToolIo = {
  stdout(chunk: Buffer): void;
  stderr(chunk: Buffer): void;
  /** The tool reads stdin: the client starts sending it. */
  wantStdin(): void;
  exit(code: number): void;
};

export type ToolCallRequest = {
  argv: string[];
  env: Record<string, string>;
  cwd: string;
  pid: number;
  ppid: number;
};

/**
 * The lab node a call runs for. Its paths (argv, cwd, what the tool opens) are the node's: the
 * fs facade resolves them in the node's view (lab/namespace/node-paths.ts), and a child the
 * tool starts runs inside the node's namespace (`command`). Without one (unit tests) paths are
 * the machine's and children run here.
 */
export type ToolNode = {
  paths: NodePaths;
  /** `argv` run inside the node, `cwd` a node path. */
  command(argv: readonly string[], cwd: string): { file: string; args: string[] };
};

/** What unwinds a tool's stack at process.exit (not an Error: no tool handler prints it). */
export class ToolExit {
  constructor(readonly code: number) {}
}

/** The parameters a CommonJS bundle's body is compiled with, in this order. */
export const BUNDLE_PARAMETERS = [
  "require",
  "module",
  "exports",
  "process",
  "console",
  "setTimeout",
  "clearTimeout",
  "setInterval",
  "clearInterval",
  "setImmediate",
  "clearImmediate",
] as const;

export type CompiledBundle = (...args: unknown[]) => void;

const realRequire = createRequire(path.join(os.tmpdir(), "clupilot-lab-tool.js"));

export class ToolCall {
  private finished = false;
  private pending = 0;
  private checkQueued = false;
  private exitCode: number | undefined;
  private cwd: string;
  /** The tool's `process.env`: the client's environment, changed only by the tool. */
  private readonly env: Record<string, string | undefined>;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly immediates = new Set<NodeJS.Immediate>();
  private stdin: Readable | null = null;
  private stdinHeld = false;
  private readonly modules = new Map<string, unknown>();

  constructor(
    private readonly request: ToolCallRequest,
    private readonly io: ToolIo,
    private readonly node: ToolNode | null = null,
  ) {
    this.cwd = request.cwd;
    this.env = { ...request.env };
  }

  /** Runs the bundle's body as the tool's main module, `argv` after `[node, script]`. */
  run(bundle: CompiledBundle, script: string): void {
    const main = { exports: {} as unknown };
    this.guard(() =>
      bundle(
        (id: string) => this.require(id),
        main,
        main.exports,
        this.process(script),
        this.console(),
        ...this.timerFunctions(),
      ),
    );
  }

  /** Data the client read from its stdin; empty = end of stdin. */
  stdinData(chunk: Buffer): void {
    if (this.stdin === null || this.finished) return;
    this.stdin.push(chunk.length === 0 ? null : chunk);
  }

  /** The client is gone (killed, or its output pipe closed): the run stops here. */
  kill(): void {
    this.end(null);
  }

  get ended(): boolean {
    return this.finished;
  }

  private end(code: number | null): void {
    if (this.finished) return;
    this.finished = true;
    for (const timer of this.timers) clearTimeout(timer);
    for (const immediate of this.immediates) clearImmediate(immediate);
    this.timers.clear();
    this.immediates.clear();
    this.stdin?.destroy();
    if (code !== null) this.io.exit(code & 0xff);
  }

  /** Throws ToolExit once the run has ended: the tool's code stops at its next effect. */
  private alive(): void {
    if (this.finished) throw new ToolExit(this.exitCode ?? 0);
  }

  /** Runs a callback of the tool: an exception that escapes it ends the run as Node would. */
  private guard(fn: () => void): void {
    if (this.finished) return;
    try {
      fn();
    } catch (error) {
      if (!(error instanceof ToolExit)) this.uncaught(error);
    }
    this.queueCheck();
  }

  private uncaught(error: unknown): void {
    if (this.finished) return;
    const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
    this.io.stderr(Buffer.from(`${text}\n`));
    this.end(1);
  }

  /** Like Node's event loop: with nothing pending the process ends with its exitCode. */
  private queueCheck(): void {
    if (this.checkQueued || this.finished) return;
    this.checkQueued = true;
    setImmediate(() => {
      this.checkQueued = false;
      if (!this.finished && this.pending === 0) this.end(this.exitCode ?? 0);
    });
  }

  private hold(): () => void {
    this.pending++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.pending--;
      this.queueCheck();
    };
  }

  /** A path the tool gave, absolute in its (the node's) view. */
  private absolute(value: string): string {
    if (value.startsWith("/")) return value;
    // Joined, not normalised: the kernel resolves `..` after symlinks, as for a real cwd.
    return this.cwd.endsWith("/") ? `${this.cwd}${value}` : `${this.cwd}/${value}`;
  }

  /** The real path of a path the tool gave, as the node's kernel would resolve it. */
  private realPath(value: string, follow = true): string {
    const absolute = this.absolute(value);
    return this.node === null ? absolute : this.node.paths.resolve(absolute, follow);
  }

  /** A real path the fs hands back, in the node's view. */
  private nodePath(value: unknown): unknown {
    return this.node !== null && typeof value === "string" ? this.node.paths.toNode(value) : value;
  }

  private require(id: string): unknown {
    const name = id.replace(/^node:/, "");
    const cached = this.modules.get(name);
    if (cached !== undefined) return cached;
    let facade: unknown;
    switch (name) {
      case "fs":
        facade = this.fs();
        break;
      case "fs/promises":
        facade = (this.require("fs") as typeof fs).promises;
        break;
      case "path":
        facade = this.path();
        break;
      case "child_process":
        facade = this.childProcess();
        break;
      case "timers": {
        const [setT, clearT, setI, clearI, setImm, clearImm] = this.timerFunctions();
        facade = {
          ...realRequire("node:timers"),
          setTimeout: setT,
          clearTimeout: clearT,
          setInterval: setI,
          clearInterval: clearI,
          setImmediate: setImm,
          clearImmediate: clearImm,
        };
        break;
      }
      case "timers/promises":
        facade = {
          setTimeout: (ms: number, value?: unknown) =>
            new Promise((resolve) => this.timerFunctions()[0](() => resolve(value), ms)),
          setImmediate: (value?: unknown) =>
            new Promise((resolve) => this.timerFunctions()[4](() => resolve(value))),
        };
        break;
      default:
        facade = realRequire(id);
    }
    this.modules.set(name, facade);
    return facade;
  }

  private fs(): typeof fs {
    const wrapped = this.wrapFunctions(fs, "callback");
    wrapped.promises = this.wrapFunctions(fs.promises, "promise");
    return wrapped;
  }

  /** Every function of an fs namespace, with its paths in the node's view and async work tracked. */
  private wrapFunctions<T extends object>(target: T, style: "callback" | "promise"): T {
    const result: Record<string, unknown> = {};
    for (const key of Object.keys(target)) {
      const value = (target as Record<string, unknown>)[key];
      result[key] =
        typeof value === "function" && /^[a-z]/.test(key)
          ? this.wrapFsFunction(key, value as (...args: unknown[]) => unknown, target, style)
          : value;
    }
    return result as T;
  }

  private wrapFsFunction(
    name: string,
    fn: (...args: unknown[]) => unknown,
    self: object,
    style: "callback" | "promise",
  ): (...args: unknown[]) => unknown {
    const sync = name.endsWith("Sync");
    const base = name.replace(/Sync$/, "");
    const returnsPath = RETURNS_PATH.has(base);
    const wrapper = (...args: unknown[]) => {
      this.alive();
      const resolved = [...args];
      // Real path → the path as the tool gave it, to put back into an error's message.
      const given = new Map<string, string>();
      const last = resolved.length - 1;
      const callback =
        !sync && style === "callback" && last >= 0 && typeof resolved[last] === "function"
          ? (resolved[last] as (...a: unknown[]) => void)
          : null;
      let refused: NodeJS.ErrnoException | null = null;
      for (const argument of pathArguments(base, args)) {
        const value = resolved[argument.index];
        if (typeof value !== "string" || value === "") continue;
        let real: string;
        try {
          real = this.realPath(value, argument.follow);
        } catch (error) {
          refused = error as NodeJS.ErrnoException;
          break;
        }
        given.set(real, value);
        resolved[argument.index] = real;
        if (argument.writes && this.node !== null && !this.node.paths.writable(real)) {
          refused = readOnlyError(base, value);
          break;
        }
      }
      const inNodeView = (error: unknown) => this.nodeError(error, given);
      if (refused !== null) {
        // Failed as the call itself fails: thrown, rejected, or handed to the callback.
        if (sync) throw refused;
        if (style === "promise") {
          const release = this.hold();
          return Promise.reject(refused).finally(release);
        }
        if (callback !== null) {
          const release = this.hold();
          const error = refused;
          process.nextTick(() => {
            release();
            this.guard(() => callback(error));
          });
          return undefined;
        }
        throw refused;
      }
      if (callback !== null) {
        const release = this.hold();
        resolved[last] = (error: unknown, ...rest: unknown[]) => {
          release();
          const results = returnsPath ? rest.map((r) => this.nodePath(r)) : rest;
          this.guard(() =>
            callback(error === null || error === undefined ? error : inNodeView(error), ...results),
          );
        };
      }
      let result: unknown;
      try {
        result = fn.apply(self, resolved);
      } catch (error) {
        throw inNodeView(error);
      }
      if (result instanceof Promise) {
        const release = this.hold();
        return result.then(
          (value: unknown) => {
            release();
            return returnsPath ? this.nodePath(value) : value;
          },
          (error: unknown) => {
            release();
            throw inNodeView(error);
          },
        );
      }
      return sync && returnsPath ? this.nodePath(result) : result;
    };
    // realpathSync.native and friends.
    for (const key of Object.keys(fn))
      (wrapper as unknown as Record<string, unknown>)[key] = (
        fn as unknown as Record<string, unknown>
      )[key];
    return wrapper;
  }

  /** An fs error as the node's kernel would have given it: the tool's paths, not the real ones. */
  private nodeError(error: unknown, given: ReadonlyMap<string, string>): unknown {
    if (this.node === null || !(error instanceof Error)) return error;
    const errno = error as NodeJS.ErrnoException & { dest?: string };
    for (const [real, value] of given) {
      if (real === value) continue;
      errno.message = errno.message.split(`'${real}'`).join(`'${value}'`);
      if (errno.path === real) errno.path = value;
      if (errno.dest === real) errno.dest = value;
    }
    return error;
  }

  private path(): typeof path {
    const resolve = (...parts: string[]) => path.resolve(this.cwd, ...parts);
    const facade = {
      ...path,
      resolve,
      relative: (from: string, to: string) => path.relative(resolve(from), resolve(to)),
    };
    return { ...facade, posix: facade, default: facade } as unknown as typeof path;
  }

  private childProcess(): typeof childProcess {
    type Options = { cwd?: string; env?: object; shell?: boolean | string };
    /**
     * (file, args, options) as spawn takes them, the tool's cwd and environment by default; for
     * a node, the program is run inside the node's namespace (nsenter), in the cwd the tool
     * meant: a child of a tool is a process of the node, as a real tool's child is.
     */
    const place = (input: unknown[]): [string, string[], Options] => {
      this.alive();
      let file = input[0] as string;
      let args = Array.isArray(input[1]) ? [...(input[1] as string[])] : [];
      const optionsAt = Array.isArray(input[1]) ? 2 : 1;
      const given = input[optionsAt];
      const options: Options = {
        ...(given !== null && typeof given === "object" ? (given as Options) : {}),
      };
      const cwd = this.absolute(options.cwd ?? this.cwd);
      options.env ??= this.env;
      if (options.shell) {
        const shell = typeof options.shell === "string" ? options.shell : "/bin/sh";
        args = ["-c", [file, ...args].join(" ")];
        file = shell;
        delete options.shell;
      }
      if (this.node === null) return [file, args, { ...options, cwd }];
      const inside = this.node.command([file, ...args], cwd);
      delete options.cwd;
      return [inside.file, inside.args, options];
    };
    const spawn = (...input: unknown[]) => {
      const [file, args, options] = place(input);
      const child = childProcess.spawn(file, args, options as childProcess.SpawnOptions);
      // A child keeps a process alive until it exits, unless it is unref()'d.
      const release = this.hold();
      child.once("exit", release);
      child.once("error", release);
      const unref = child.unref.bind(child);
      child.unref = () => {
        release();
        unref();
      };
      return child;
    };
    const spawnSync = (...input: unknown[]) => {
      const [file, args, options] = place(input);
      return childProcess.spawnSync(file, args, options as childProcess.SpawnSyncOptions);
    };
    const execFileSync = (...input: unknown[]) => {
      const [file, args, options] = place(input);
      return childProcess.execFileSync(file, args, options as childProcess.ExecFileSyncOptions);
    };
    const execSync = (command: string, options?: object) =>
      execFileSync("/bin/sh", ["-c", command], options ?? {});
    return {
      ...childProcess,
      spawn,
      spawnSync,
      execFileSync,
      execSync,
      exec: () => {
        throw new Error("lab: child_process.exec is not available to a simulated tool; use spawn");
      },
      execFile: () => {
        throw new Error(
          "lab: child_process.execFile is not available to a simulated tool; use spawn",
        );
      },
      fork: () => {
        throw new Error("lab: child_process.fork is not available to a simulated tool; use spawn");
      },
    } as unknown as typeof childProcess;
  }

  private timerFunctions() {
    const setT = (fn: (...a: unknown[]) => void, ms?: number, ...args: unknown[]) => {
      this.alive();
      const release = this.hold();
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        release();
        this.guard(() => fn(...args));
      }, ms);
      this.timers.add(timer);
      return timer;
    };
    const setI = (fn: (...a: unknown[]) => void, ms?: number, ...args: unknown[]) => {
      this.alive();
      this.pending++;
      const timer = setInterval(() => this.guard(() => fn(...args)), ms);
      this.timers.add(timer);
      return timer;
    };
    const clearT = (timer: NodeJS.Timeout | undefined) => {
      if (timer === undefined || !this.timers.delete(timer)) return;
      clearTimeout(timer);
      this.pending--;
      this.queueCheck();
    };
    const setImm = (fn: (...a: unknown[]) => void, ...args: unknown[]) => {
      this.alive();
      const release = this.hold();
      const immediate = setImmediate(() => {
        this.immediates.delete(immediate);
        release();
        this.guard(() => fn(...args));
      });
      this.immediates.add(immediate);
      return immediate;
    };
    const clearImm = (immediate: NodeJS.Immediate | undefined) => {
      if (immediate === undefined || !this.immediates.delete(immediate)) return;
      clearImmediate(immediate);
      this.pending--;
      this.queueCheck();
    };
    return [setT, clearT, setI, clearT, setImm, clearImm] as const;
  }

  private output(write: (chunk: Buffer) => void): Writable {
    const stream = new Writable();
    stream.write = ((chunk: unknown, encoding?: unknown, callback?: unknown) => {
      this.alive();
      const cb = typeof encoding === "function" ? encoding : callback;
      const buffer = Buffer.isBuffer(chunk)
        ? chunk
        : chunk instanceof Uint8Array
          ? Buffer.from(chunk)
          : Buffer.from(
              String(chunk),
              typeof encoding === "string" ? (encoding as BufferEncoding) : "utf8",
            );
      write(buffer);
      if (typeof cb === "function") process.nextTick(() => this.guard(() => cb()));
      return true;
    }) as Writable["write"];
    return stream;
  }

  private stdinStream(): Readable {
    if (this.stdin !== null) return this.stdin;
    let release: (() => void) | null = null;
    const stream = new Readable({
      read: () => {
        if (this.stdinHeld) return;
        // A process that reads stdin stays alive until it ends; only now does the client send it.
        this.stdinHeld = true;
        release = this.hold();
        this.io.wantStdin();
      },
    });
    const done = () => release?.();
    stream.once("end", done);
    stream.once("close", done);
    this.stdin = stream;
    return stream;
  }

  private console(): Console {
    return new Console({
      stdout: this.output((chunk) => this.io.stdout(chunk)),
      stderr: this.output((chunk) => this.io.stderr(chunk)),
    });
  }

  /** The tool's `process`: its own fields first, the server's process for everything else. */
  private process(script: string): NodeJS.Process {
    const events = new EventEmitter();
    const stdout = this.output((chunk) => this.io.stdout(chunk));
    const stderr = this.output((chunk) => this.io.stderr(chunk));
    const own: Record<PropertyKey, unknown> = {
      argv: [process.execPath, script, ...this.request.argv],
      env: this.env,
      pid: this.request.pid,
      ppid: this.request.ppid,
      stdout,
      stderr,
      cwd: () => this.cwd,
      chdir: (dir: string) => {
        this.alive();
        const target = path.resolve(this.cwd, dir);
        if (!fs.statSync(this.realPath(target)).isDirectory())
          throw new Error(`ENOTDIR: not a directory, chdir ${dir}`);
        this.cwd = target;
      },
      exit: (code?: number) => {
        if (code !== undefined) this.exitCode = Number(code);
        this.end(this.exitCode ?? 0);
        throw new ToolExit(this.exitCode ?? 0);
      },
      nextTick: (fn: (...a: unknown[]) => void, ...args: unknown[]) => {
        this.alive();
        process.nextTick(() => this.guard(() => fn(...args)));
      },
      on: events.on.bind(events),
      once: events.once.bind(events),
      off: events.off.bind(events),
      addListener: events.addListener.bind(events),
      removeListener: events.removeListener.bind(events),
      removeAllListeners: events.removeAllListeners.bind(events),
      emit: events.emit.bind(events),
      listeners: events.listeners.bind(events),
    };
    const bound = new Map<PropertyKey, unknown>();
    return new Proxy(process, {
      get: (target, key) => {
        if (key === "stdin") return this.stdinStream();
        if (key === "exitCode") return this.exitCode;
        if (Object.hasOwn(own, key)) return own[key];
        const value = Reflect.get(target, key) as unknown;
        if (typeof value !== "function") return value;
        // The server's own method, bound to it, with its properties (`hrtime.bigint`).
        if (!bound.has(key))
          bound.set(
            key,
            Object.assign((value as (...a: unknown[]) => unknown).bind(target), value),
          );
        return bound.get(key);
      },
      set: (_target, key, value) => {
        if (key === "exitCode") this.exitCode = value === undefined ? undefined : Number(value);
        else own[key] = value;
        return true;
      },
      has: (target, key) => Object.hasOwn(own, key) || Reflect.has(target, key),
    });
  }
}
