import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import { build } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { startLab, waitUntil, type LabNode } from "../index";
import { isProcessAlive } from "../processes";
import { labExec } from "../test-helpers";
import { processesIn, startNodeNamespace, type NodeNamespace } from "./namespace";

/**
 * A lab node's commands run in a mount namespace of its own, with the node's root folder where a
 * host keeps its files: real bash and the simulated tools (which run outside, in the tool
 * server) see one file system, and nothing of it reaches the real system.
 */

/** The machine's mount table mentions none of a node's folders, whatever the node does. */
function realMountsUnder(dir: string): string[] {
  return fs
    .readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .filter((line) => line.includes(dir));
}

describe("a lab node sees real paths: the issue's import", () => {
  let lab: LabNode;
  let outside: string;
  beforeAll(async () => {
    lab = await startLab({ state: "proxmox", storage: "dir", timeScale: 0.01 });
    outside = fs.mkdtempSync(path.join(os.tmpdir(), "clupilot-outside-"));
  });
  afterAll(async () => {
    await lab?.stop();
    fs.rmSync(outside, { recursive: true, force: true });
  });

  it("truncate … && qm set … import-from=/tmp/x.img imports the file bash made", async () => {
    expect((await labExec(lab, "qm create 9101 --name import-test")).code).toBe(0);
    const result = await labExec(
      lab,
      "truncate -s 64M /tmp/x.img && qm set 9101 --scsi0 local:0,import-from=/tmp/x.img",
    );
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(
      "scsi0: successfully created disk 'local:9101/vm-9101-disk-0.raw,size=64M'",
    );
    // Where the node's bash made it, and where directory storage keeps the volume.
    expect(fs.statSync(path.join(lab.root, "tmp/x.img")).size).toBe(64 * 1024 ** 2);
    const volume = path.join(lab.root, "var/lib/vz/images/9101/vm-9101-disk-0.raw");
    expect(fs.statSync(volume).size).toBe(64 * 1024 ** 2);
    expect((await labExec(lab, "ls -l /var/lib/vz/images/9101/")).stdout).toContain(
      "vm-9101-disk-0.raw",
    );
    expect((await labExec(lab, "qm config 9101")).stdout).toMatch(
      /^scsi0: local:9101\/vm-9101-disk-0\.raw,size=64M$/m,
    );
  });

  it("refuses, as Proxmox does, a path that is not the node's: the machine's /tmp is not there", async () => {
    const machineFile = path.join(outside, "x.img");
    fs.writeFileSync(machineFile, Buffer.alloc(1024 * 1024));
    const result = await labExec(
      lab,
      `test -e ${machineFile}; echo "bash sees it: $?"; qm set 9101 --scsi1 local:0,import-from=${machineFile}`,
    );
    expect(result.stdout).toBe("bash sees it: 1\n");
    expect(result.stderr).toBe(`can't find file '${machineFile}'\n`);
    expect(result.code).toBe(255);
  });

  it("keeps the node's writes in its root folder: the rest of the machine is read-only inside", async () => {
    const result = await labExec(lab, "touch /usr/clupilot-lab-probe; echo $?; touch /var/tmp/ok");
    expect(result.stdout).toBe("1\n");
    expect(result.stderr).toContain("Read-only file system");
    expect(fs.existsSync("/usr/clupilot-lab-probe")).toBe(false);
    expect(fs.existsSync(path.join(lab.root, "var/tmp/ok"))).toBe(true);
    expect(realMountsUnder(lab.root)).toEqual([]);
  });
});

describe("a node's namespace and the tool server agree on every path", () => {
  let root: string;
  let ns: NodeNamespace;
  beforeAll(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), "clupilot-ns-"));
    const at = (...parts: string[]) => path.join(root, ...parts);
    for (const dir of ["etc", "var/lib", "tmp/dir", "run", "root", ".lab", "usr/lib"]) {
      fs.mkdirSync(at(dir), { recursive: true });
    }
    fs.writeFileSync(at("etc/hostname"), "pve1\n");
    fs.writeFileSync(at("usr/lib/os-release"), "ID=debian\n");
    fs.symlinkSync("../usr/lib/os-release", at("etc/os-release"));
    fs.symlinkSync("../usr/bin/env", at("etc/env-link"));
    fs.symlinkSync("/run", at("var/run"));
    fs.writeFileSync(at("run/marker"), "run\n");
    fs.symlinkSync("/var/lib", at("tmp/to-lib"));
    fs.symlinkSync("loop-b", at("tmp/loop-a"));
    fs.symlinkSync("loop-a", at("tmp/loop-b"));
    fs.writeFileSync(at("tmp/dir/file"), "x\n");
    fs.writeFileSync(at(".lab/faults.json"), "{}\n");
    ns = await startNodeNamespace(root);
  });
  afterAll(async () => {
    await ns?.close();
    fs.rmSync(root, { recursive: true, force: true });
  });

  const inside = (script: string, ...args: string[]) => {
    const { file, args: argv } = ns.command(["/bin/bash", "-c", script, "bash", ...args]);
    const result = spawnSync(file, argv, { encoding: "utf8" });
    expect(result.status, result.stderr).toBe(0);
    return result.stdout;
  };
  const outside = (nodePath: string, follow: boolean): string => {
    try {
      const real = ns.paths.resolve(nodePath, follow);
      const stat = follow ? fs.statSync(real) : fs.lstatSync(real);
      return `${stat.dev}:${stat.ino}`;
    } catch (error) {
      return (error as NodeJS.ErrnoException).code ?? "error";
    }
  };

  const PATHS = [
    "/etc/hostname",
    "/etc/os-release",
    "/etc/env-link",
    "/var/run/marker",
    "/var/run",
    "/tmp/to-lib/../lib",
    "/tmp/dir/../dir/file",
    "/tmp/missing/../dir/file",
    "/tmp/loop-a",
    "/run/clupilot-lab/node/faults.json",
    "/run/clupilot-lab/tools/client",
    "/usr/lib/os-release",
    "/usr/bin/env",
    "/proc/sys/kernel/random/boot_id",
    "/tmp/nothing-here",
  ];
  // stat's dev:inode, or what stopped it, as the kernel inside the namespace answers.
  const STAT = `for p in "$@"; do
    for flag in -L ""; do
      if out=$(stat $flag -c '%d:%i' "$p" 2>&1); then printf '%s\\n' "$out"
      elif [[ $out == *"Too many levels"* ]]; then echo ELOOP
      else echo ENOENT; fi
    done
  done`;

  it("names the same file for every path, through binds, symlinks and `..`", () => {
    const kernel = inside(STAT, ...PATHS)
      .trimEnd()
      .split("\n");
    const ours = PATHS.flatMap((p) => [outside(p, true), outside(p, false)]);
    expect(ours.map((answer, i) => `${PATHS[i >> 1]} ${answer}`)).toEqual(
      kernel.map((answer, i) => `${PATHS[i >> 1]} ${answer}`),
    );
    // Not vacuous: the paths name different, existing files.
    expect(new Set(kernel.filter((a) => a.includes(":"))).size).toBeGreaterThan(10);
  });

  it("agrees on where the node may write", () => {
    const targets = [
      "/tmp/new",
      "/etc/new",
      "/var/run/new",
      "/home/new",
      "/usr/clupilot-lab-probe",
      "/run/clupilot-lab/tools/new",
      "/dev/null",
    ];
    const kernel = inside(
      'for p in "$@"; do if (: >> "$p") 2>/dev/null; then echo yes; else echo no; fi; done',
      ...targets,
    )
      .trimEnd()
      .split("\n");
    const ours = targets.map((p) => (ns.paths.writable(ns.paths.resolve(p)) ? "yes" : "no"));
    expect(ours).toEqual(kernel);
    expect(kernel).toEqual(["yes", "yes", "yes", "yes", "no", "no", "yes"]);
  });

  it("holds every process started inside, in whatever group or session, and kills them all", async () => {
    const pids = inside(
      "nohup setsid sleep 300 >/dev/null 2>&1 </dev/null & echo $!; " +
        "env -i sleep 300 >/dev/null 2>&1 </dev/null & echo $!",
    )
      .trim()
      .split("\n")
      .map(Number);
    expect(ns.processes()).toEqual(expect.arrayContaining(pids));
    expect(realMountsUnder(root)).toEqual([]);
    expect(await ns.killAll()).toBeGreaterThanOrEqual(2);
    await waitUntil(() => pids.every((pid) => !isProcessAlive(pid)), {
      what: "the sleepers to die",
    });
    expect(ns.processes()).toEqual([]);
  });
});

/**
 * The fixture as one self-contained script for a user other than root, in `dir` (which that user
 * can read): a clone under /root (0700) is out of that user's reach, so neither the checkout's
 * sources nor `tsx` in its node_modules can be loaded from there. The bundle holds the same code;
 * beside it, at the same places relative to it as in lab/, the two things that code reaches by
 * path: the mount script and the tools folder the node binds.
 */
async function bundleFixtureInto(dir: string): Promise<string> {
  const lab = path.resolve(import.meta.dirname, "..");
  const out = path.join(dir, "lab", "namespace", "namespace.fixture.mjs");
  await build({
    entryPoints: [path.join(lab, "namespace", "namespace.fixture.ts")],
    outfile: out,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    logLevel: "error",
  });
  fs.copyFileSync(
    path.join(lab, "namespace", "mount-binds"),
    path.join(dir, "lab", "namespace", "mount-binds"),
  );
  fs.chmodSync(path.join(dir, "lab", "namespace", "mount-binds"), 0o755);
  fs.cpSync(path.join(lab, "tools"), path.join(dir, "lab", "tools"), {
    recursive: true,
    verbatimSymlinks: true,
  });
  // Readable by that user whatever the umask this process runs with.
  for (const sub of ["lab", "lab/namespace", "lab/tools", "lab/tools/bin"])
    fs.chmodSync(path.join(dir, sub), 0o755);
  fs.chmodSync(out, 0o644);
  return out;
}

describe("a lab process that dies", () => {
  const fixture = path.join(import.meta.dirname, "namespace.fixture.ts");
  /** The fixture as its own Node process, `wrapper` (setpriv …) in front. */
  const run = (args: string[], wrapper: string[] = []) => {
    const argv = [...wrapper, process.execPath, "--import", "tsx", fixture, ...args];
    return spawn(argv[0]!, argv.slice(1), { stdio: ["ignore", "pipe", "pipe"] });
  };

  it("leaves no mount on the real system; what the node still runs stays inside the namespace", async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "clupilot-ns-killed-"));
    const lab = run([root]);
    let out = "";
    lab.stdout!.on("data", (chunk) => (out += chunk));
    await waitUntil(() => out.includes("\n"), {
      timeoutMs: 30_000,
      what: "the fixture's namespace",
    });
    const { id, sleeper } = JSON.parse(out) as { id: string; sleeper: number };
    try {
      lab.kill("SIGKILL");
      await new Promise((resolve) => lab.once("exit", resolve));
      expect(realMountsUnder(root)).toEqual([]);
      // The node's process outlived the lab (as a detached build does) without leaving the node.
      expect(isProcessAlive(sleeper)).toBe(true);
      expect(fs.readlinkSync(`/proc/${sleeper}/ns/mnt`)).toBe(id);
      expect(id).not.toBe(fs.readlinkSync("/proc/self/ns/mnt"));
      expect(processesIn(id)).toEqual([sleeper]);
    } finally {
      try {
        process.kill(sleeper, "SIGKILL");
      } catch {
        // gone
      }
    }
    // With its last process the namespace, and its mounts, are gone.
    await waitUntil(() => processesIn(id).length === 0, { what: "the namespace to empty" });
    fs.rmSync(root, { recursive: true, force: true });
  }, 60_000);

  it.runIf(process.getuid?.() === 0)(
    "as a user other than root: the namespace is made inside a user namespace of its own",
    async () => {
      const home = fs.mkdtempSync(path.join(os.tmpdir(), "clupilot-ns-user-"));
      const root = path.join(home, "root");
      fs.mkdirSync(root);
      const bundle = await bundleFixtureInto(home);
      fs.chownSync(home, 65534, 65534);
      fs.chownSync(root, 65534, 65534);
      const lab = spawn(
        "setpriv",
        ["--reuid=65534", "--regid=65534", "--clear-groups", process.execPath, bundle, root],
        { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, HOME: home, TMPDIR: home } },
      );
      let out = "";
      let err = "";
      lab.stdout.on("data", (chunk) => (out += chunk));
      lab.stderr.on("data", (chunk) => (err += chunk));
      try {
        await waitUntil(() => out.includes("\n") || lab.exitCode !== null, {
          timeoutMs: 30_000,
          what: "the fixture's namespace",
        });
        expect(err).toBe("");
        const { id, sleeper } = JSON.parse(out) as { id: string; sleeper: number };
        await waitUntil(() => processesIn(id).includes(sleeper), { what: "the sleeper inside" });
        // The user's own process, in a user namespace that is not the machine's.
        expect(fs.statSync(`/proc/${sleeper}`).uid).toBe(65534);
        expect(fs.readlinkSync(`/proc/${sleeper}/ns/user`)).not.toBe(
          fs.readlinkSync("/proc/self/ns/user"),
        );
        expect(realMountsUnder(root)).toEqual([]);
        process.kill(sleeper, "SIGKILL");
      } finally {
        lab.kill("SIGKILL");
        fs.rmSync(home, { recursive: true, force: true });
      }
    },
    60_000,
  );

  it.runIf(process.getuid?.() === 0)(
    "where no mount namespace can be had, says so and stops",
    async () => {
      const root = fs.mkdtempSync(path.join(os.tmpdir(), "clupilot-ns-refused-"));
      // Root without CAP_SYS_ADMIN: unshare(CLONE_NEWNS) is refused, as in a locked-down container.
      const lab = run([root], ["setpriv", "--bounding-set=-sys_admin"]);
      let stderr = "";
      lab.stderr!.on("data", (chunk) => (stderr += chunk));
      const code = await new Promise((resolve) => lab.once("exit", resolve));
      fs.rmSync(root, { recursive: true, force: true });
      expect(code).toBe(1);
      expect(stderr).toContain("a lab node runs in a mount namespace of its own");
      expect(stderr).toContain("The lab needs Linux with mount namespaces");
    },
    60_000,
  );
});
