import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import vm from "node:vm";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { NodePaths } from "../namespace/node-paths";
import { BUNDLE_PARAMETERS, ToolCall, type CompiledBundle, type ToolNode } from "./tool-call";

/**
 * A tool run inside the tool server behaves like the process it used to be: its own module
 * state, argv/env/pid/cwd, an end at process.exit or when nothing is pending, and nothing it does
 * after its end. The "bundles" here are CommonJS bodies like esbuild's output for lab/.
 */

type Result = {
  stdout: string;
  stderr: string;
  stdoutBytes: number[];
  code: number | null;
  wantedStdin: boolean;
};

function compile(code: string): CompiledBundle {
  return vm.compileFunction(code, [...BUNDLE_PARAMETERS]) as CompiledBundle;
}

function start(
  bundle: CompiledBundle,
  options: { argv?: string[]; cwd?: string; pid?: number; env?: Record<string, string> } = {},
) {
  const result: Result = {
    stdout: "",
    stderr: "",
    stdoutBytes: [],
    code: null,
    wantedStdin: false,
  };
  let ended: () => void = () => {};
  const done = new Promise<Result>((resolve) => (ended = () => resolve(result)));
  const call = new ToolCall(
    {
      argv: options.argv ?? [],
      env: options.env ?? {},
      cwd: options.cwd ?? "/",
      pid: options.pid ?? 4242,
      ppid: 4241,
    },
    {
      stdout: (chunk) => {
        result.stdout += chunk.toString();
        result.stdoutBytes.push(...chunk);
      },
      stderr: (chunk) => (result.stderr += chunk.toString()),
      wantStdin: () => (result.wantedStdin = true),
      exit: (code) => {
        result.code = code;
        ended();
      },
    },
  );
  call.run(bundle, "/usr/bin/tool");
  return { call, done };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "clupilot-tool-call-"));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe("a tool run in the tool server", () => {
  it("starts with fresh module state on every call, as a new process did", async () => {
    const bundle = compile(
      "let calls = 0; calls++; process.stdout.write(`calls=${calls} argv=${process.argv.slice(2).join(',')}\\n`);",
    );
    const first = await start(bundle, { argv: ["list"] }).done;
    const second = await start(bundle, { argv: ["config", "9000"] }).done;
    expect(first).toMatchObject({ stdout: "calls=1 argv=list\n", code: 0 });
    expect(second).toMatchObject({ stdout: "calls=1 argv=config,9000\n", code: 0 });
  });

  it("sees the client's pid, environment and working directory, and resolves relative paths there", async () => {
    fs.writeFileSync(path.join(dir, "in.txt"), "from the cwd\n");
    const result = await start(
      compile(`
        const fs = require("node:fs");
        const path = require("node:path");
        fs.writeFileSync("out.txt", fs.readFileSync("in.txt", "utf8"));
        process.stdout.write([process.pid, process.env.LANG, process.cwd(), path.resolve("x")].join(" "));
      `),
      { cwd: dir, pid: 31337, env: { LANG: "C.UTF-8" } },
    ).done;
    expect(result).toMatchObject({
      stdout: `31337 C.UTF-8 ${dir} ${dir}/x`,
      code: 0,
    });
    expect(fs.readFileSync(path.join(dir, "out.txt"), "utf8")).toBe("from the cwd\n");
    expect(process.pid).not.toBe(31337);
  });

  it("ends at process.exit: nothing after it runs, not even a catch block's file write", async () => {
    const marker = path.join(dir, "after-exit");
    const result = await start(
      compile(`
        const fs = require("fs");
        try {
          process.stdout.write("before\\n");
          process.exit(3);
          process.stdout.write("after\\n");
        } catch {
          fs.writeFileSync(${JSON.stringify(marker)}, "ran");
        } finally {
          fs.writeFileSync(${JSON.stringify(marker)}, "ran");
        }
      `),
    ).done;
    expect(result).toMatchObject({ stdout: "before\n", code: 3 });
    await sleep(50);
    expect(fs.existsSync(marker)).toBe(false);
  });

  it("ends when nothing is pending any more, with process.exitCode", async () => {
    const started = Date.now();
    const result = await start(
      compile(
        `
        const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
        (async () => {
          await sleep(150);
          await require("fs").promises.readFile(__filenameOfThisTest);
          process.stdout.write("slept\\n");
          process.exitCode = 100;
        })();
      `.replace("__filenameOfThisTest", JSON.stringify(path.join(dir, "in.txt"))),
      ),
    ).done;
    expect(result).toMatchObject({ stdout: "slept\n", code: 100 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
  });

  it("ends with code 1 and the stack on stderr at an uncaught exception", async () => {
    const result = await start(compile('setTimeout(() => { throw new Error("tool bug"); }, 1);'))
      .done;
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("Error: tool bug");
  });

  it("asks for stdin only when the tool reads it, and ends at its end", async () => {
    const quiet = await start(compile('process.stdout.write("no stdin read");')).done;
    expect(quiet.wantedStdin).toBe(false);

    const { call, done } = start(
      compile(`
        let text = "";
        process.stdin.setEncoding("utf8");
        process.stdin.on("data", (c) => (text += c));
        process.stdin.on("end", () => process.stdout.write(text.toUpperCase()));
      `),
    );
    await sleep(20);
    call.stdinData(Buffer.from("line one\n"));
    call.stdinData(Buffer.from("line two\n"));
    call.stdinData(Buffer.alloc(0));
    const result = await done;
    expect(result).toMatchObject({ wantedStdin: true, stdout: "LINE ONE\nLINE TWO\n", code: 0 });
  });

  it("stops where it is when the client goes away: its timers never fire, it sends no exit", async () => {
    const marker = path.join(dir, "after-kill");
    const { call, done } = start(
      compile(
        `setTimeout(() => require("fs").writeFileSync(${JSON.stringify(marker)}, "late"), 150);`,
      ),
    );
    let exited = false;
    void done.then(() => (exited = true));
    await sleep(20);
    call.kill();
    await sleep(300);
    expect(fs.existsSync(marker)).toBe(false);
    expect(exited).toBe(false);
    expect(call.ended).toBe(true);
  });

  it("passes bytes through unchanged", async () => {
    const result = await start(
      compile(
        "const b = Buffer.alloc(256); for (let i = 0; i < 256; i++) b[i] = i; process.stdout.write(b);",
      ),
    ).done;
    expect(result.stdoutBytes).toEqual(Array.from({ length: 256 }, (_, i) => i));
  });
});

describe("a tool run for a lab node", () => {
  let root: string;
  let node: ToolNode;
  const commands: { argv: readonly string[]; cwd: string }[] = [];
  beforeAll(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), "clupilot-tool-node-"));
    fs.mkdirSync(path.join(root, "tmp"));
    fs.mkdirSync(path.join(root, "etc"));
    fs.writeFileSync(path.join(root, "tmp/x.img"), "image");
    fs.symlinkSync("/tmp", path.join(root, "etc/tmp-link"));
    node = {
      paths: new NodePaths(
        [
          { target: "/tmp", source: path.join(root, "tmp") },
          { target: "/etc", source: path.join(root, "etc") },
        ],
        [{ point: "/", readOnly: false }],
      ),
      // Stands in for nsenter: marks the child, records where it was meant to run.
      command: (argv, cwd) => {
        commands.push({ argv, cwd });
        return { file: "/usr/bin/env", args: ["INSIDE_NODE=yes", ...argv] };
      },
    };
  });
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  const startForNode = (code: string, cwd = "/tmp") => {
    let result = { stdout: "", stderr: "", code: null as number | null };
    return new Promise<typeof result>((resolve) => {
      const call = new ToolCall(
        { argv: [], env: {}, cwd, pid: 4242, ppid: 4241 },
        {
          stdout: (chunk) => (result.stdout += chunk.toString()),
          stderr: (chunk) => (result.stderr += chunk.toString()),
          wantStdin: () => {},
          exit: (code) => {
            result = { ...result, code };
            resolve(result);
          },
        },
        node,
      );
      call.run(compile(code), "/usr/bin/tool");
    });
  };

  it("opens the node's files by the node's paths, relative ones from its cwd, through its symlinks", async () => {
    const result = await startForNode(`
      const fs = require("fs");
      process.stdout.write([
        fs.readFileSync("/tmp/x.img", "utf8"),
        fs.readFileSync("x.img", "utf8"),
        fs.readFileSync("/etc/tmp-link/x.img", "utf8"),
        fs.realpathSync("/etc/tmp-link/x.img"),
        fs.readlinkSync("/etc/tmp-link"),
      ].join(" "));
      fs.writeFileSync("/tmp/out", "written");
    `);
    expect(result).toMatchObject({
      stdout: "image image image /tmp/x.img /tmp",
      code: 0,
    });
    expect(fs.readFileSync(path.join(root, "tmp/out"), "utf8")).toBe("written");
  });

  it("fails as inside the node: the node's path in the message, EROFS outside its folders", async () => {
    const result = await startForNode(`
      const fs = require("fs");
      for (const attempt of [
        () => fs.readFileSync("/tmp/missing"),
        () => fs.writeFileSync("/usr/clupilot-tool-probe", "x"),
      ]) {
        try { attempt(); } catch (error) { process.stdout.write(error.code + " " + error.message + "\\n"); }
      }
      fs.promises.mkdir("/usr/clupilot-tool-probe").catch((error) => process.stdout.write(error.code + "\\n"));
    `);
    expect(result.stdout).toBe(
      "ENOENT ENOENT: no such file or directory, open '/tmp/missing'\n" +
        "EROFS EROFS: read-only file system, open '/usr/clupilot-tool-probe'\n" +
        "EROFS\n",
    );
    expect(fs.existsSync("/usr/clupilot-tool-probe")).toBe(false);
  });

  it("starts its children inside the node, in the cwd it meant", async () => {
    const result = await startForNode(
      `
      const { spawn } = require("child_process");
      const child = spawn("/bin/sh", ["-c", 'echo "$INSIDE_NODE"'], { stdio: ["ignore", "pipe", "inherit"] });
      child.stdout.on("data", (chunk) => process.stdout.write(chunk));
    `,
      "/etc",
    );
    expect(result).toMatchObject({ stdout: "yes\n", code: 0 });
    expect(commands.at(-1)).toEqual({
      argv: ["/bin/sh", "-c", 'echo "$INSIDE_NODE"'],
      cwd: "/etc",
    });
  });
});
