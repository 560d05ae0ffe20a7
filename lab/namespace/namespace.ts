import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { nodeBinds, type Bind } from "./binds";
import { enterArgs, NSENTER, program, type NamespaceEntry } from "./enter";
import { copyMachineEtc } from "./machine-etc";
import { NodePaths } from "./node-paths";

/**
 * A lab node's mount namespace: everything the node runs (its SSH server's commands, what they
 * start, detached or not, the tools' own children) runs in it, and sees the node's root folder
 * where a host keeps its files (./binds.ts). The namespace exists only while something holds
 * it: the lab process (an open `/proc/<pid>/ns/mnt`, closed by close() or by the lab dying) and
 * the node's processes. Its mounts never appear on the real system, so a killed lab leaves none.
 *
 * As root it is a plain mount namespace (`unshare --mount`); as another user the same inside a
 * user namespace of its own, where the user is root (`--user --map-root-user`). Where neither is
 * allowed the lab says so and stops: there is no second way for a node to see its files.
 */

export type NodeNamespace = {
  /** `mnt:[4026532…]`, what `/proc/<pid>/ns/mnt` of every process inside reads. */
  readonly id: string;
  readonly binds: readonly Bind[];
  /** The node's file system for code outside it (the tool server). */
  readonly paths: NodePaths;
  /** Files that enter the namespace (`nsenter --mount=…`), valid while it is open. */
  readonly entry: NamespaceEntry;
  /** `argv` run inside the node with `cwd` (a path inside the node) as working directory. */
  command(argv: readonly string[], cwd?: string): { file: string; args: string[] };
  /** The live processes inside the node. */
  processes(): number[];
  /** SIGKILLs every process inside the node until none is left; resolves with how many died. */
  killAll(): Promise<number>;
  /** killAll(), then lets go of the namespace (it ends with its last process). Idempotent. */
  close(): Promise<void>;
};

const MOUNT_BINDS = path.join(path.dirname(fileURLToPath(import.meta.url)), "mount-binds");
const START_TIMEOUT_MS = 15_000;

let nsenterChecked = false;

/** util-linux ≥ 2.38: nsenter's `--wdns`, which the lab relies on (./enter.ts). */
function checkNsenter(): void {
  if (nsenterChecked) return;
  const help = spawnSync(NSENTER, ["--help"], { encoding: "utf8" });
  if (!`${help.stdout}`.includes("--wdns")) {
    throw new Error(
      `lab: ${NSENTER} has no --wdns (util-linux 2.38 or later has it): the lab cannot start a ` +
        "node's commands inside its namespace. Install a newer util-linux (Debian 12 or later).",
    );
  }
  nsenterChecked = true;
}

export async function startNodeNamespace(
  root: string,
  options: { shared?: readonly string[] } = {},
): Promise<NodeNamespace> {
  checkNsenter();
  const binds = nodeBinds(root, options.shared);
  prepareMountPoints(binds);
  copyMachineEtc(root);

  const asUser = process.getuid?.() !== 0;
  const child = spawn(
    program("unshare"),
    [
      ...(asUser ? ["--user", "--map-root-user"] : []),
      "--mount",
      "--propagation",
      "private",
      "--",
      MOUNT_BINDS,
      os.machine(),
      ...binds.flatMap((bind) => [bind.readOnly ? "ro" : "rw", bind.source, bind.target]),
    ],
    { stdio: ["pipe", "pipe", "pipe"] },
  );
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const exited = new Promise<number | null>((resolve) => {
    child.once("exit", (code) => resolve(code));
    child.once("error", (error) => {
      stderr += error.message;
      resolve(null);
    });
  });
  const unavailable = (why: string) =>
    new Error(
      `lab: a lab node runs in a mount namespace of its own (unshare --mount${asUser ? " in a user namespace" : ""}), ` +
        `and this machine did not give it one: ${why.trim() || "no reason given"}. ` +
        "The lab needs Linux with mount namespaces: run it as root, or allow unprivileged user " +
        "namespaces (sysctl kernel.unprivileged_userns_clone=1, or AppArmor's " +
        "kernel.apparmor_restrict_unprivileged_userns=0).",
    );

  const ready = await new Promise<boolean>((resolve) => {
    let out = "";
    const timer = setTimeout(() => resolve(false), START_TIMEOUT_MS);
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      out += chunk;
      if (out.includes("ready\n")) {
        clearTimeout(timer);
        resolve(true);
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      resolve(false);
    });
  });
  if (!ready) {
    child.kill("SIGKILL");
    await exited;
    throw unavailable(stderr || `no answer from ${MOUNT_BINDS} within ${START_TIMEOUT_MS} ms`);
  }

  const pid = child.pid!;
  const fds: number[] = [];
  let entry: NamespaceEntry;
  let id: string;
  try {
    const mountFd = fs.openSync(`/proc/${pid}/ns/mnt`, "r");
    fds.push(mountFd);
    const userFd = asUser ? fs.openSync(`/proc/${pid}/ns/user`, "r") : null;
    if (userFd !== null) fds.push(userFd);
    id = fs.readlinkSync(`/proc/self/fd/${mountFd}`);
    if (id === fs.readlinkSync("/proc/self/ns/mnt")) throw new Error("it shares the lab's own");
    entry = {
      mount: `/proc/${process.pid}/fd/${mountFd}`,
      user: userFd === null ? null : `/proc/${process.pid}/fd/${userFd}`,
    };
  } catch (error) {
    for (const fd of fds) fs.closeSync(fd);
    child.kill("SIGKILL");
    await exited;
    throw unavailable(error instanceof Error ? error.message : String(error));
  }
  child.stdin.end();
  const code = await exited;
  if (code !== 0) {
    for (const fd of fds) fs.closeSync(fd);
    throw unavailable(stderr || `mount-binds exited with ${String(code)}`);
  }

  const processes = () => processesIn(id);
  let closed = false;
  const killAll = async () => {
    let killed = 0;
    for (let round = 0; round < 200; round++) {
      const pids = processes();
      if (pids.length === 0) return killed;
      for (const member of pids) {
        try {
          process.kill(member, "SIGKILL");
          killed++;
        } catch {
          // already gone
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const left = processes();
    if (left.length > 0) {
      process.stderr.write(
        `lab: processes ${left.join(", ")} of the node in ${root} survived SIGKILL\n`,
      );
    }
    return killed;
  };
  return {
    id,
    binds,
    paths: new NodePaths(binds),
    entry,
    command(argv, cwd = "/") {
      if (closed) throw new Error(`lab: the node in ${root} is not running`);
      return { file: NSENTER, args: [...enterArgs(entry, cwd), ...argv] };
    },
    processes,
    killAll,
    async close() {
      if (closed) return;
      closed = true;
      await killAll();
      for (const fd of fds) fs.closeSync(fd);
    },
  };
}

/**
 * The live processes whose mount namespace is `id`. A zombie has left its namespaces and is not
 * counted; a process of another user is not readable and not ours.
 */
export function processesIn(id: string): number[] {
  const found: number[] = [];
  let entries: string[];
  try {
    entries = fs.readdirSync("/proc");
  } catch {
    return found;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (fs.readlinkSync(`/proc/${entry}/ns/mnt`) === id) found.push(Number(entry));
    } catch {
      // gone, a zombie, or not ours
    }
  }
  return found;
}

/**
 * Every bind's mount point exists inside the namespace before it is mounted: a real path (which
 * is there) or one inside an earlier bind (made in the node's root folder). Sources are made
 * too (a root folder from before a bind was added lacks it). Nothing is created outside the
 * root folder: a mount point that would have to be is refused.
 */
function prepareMountPoints(binds: readonly Bind[]): void {
  for (const [index, bind] of binds.entries()) {
    const real = fs.statSync(bind.target, { throwIfNoEntry: false });
    const file = real !== undefined && !real.isDirectory();
    ensure(bind.source, file);
    const point = new NodePaths(binds.slice(0, index), []).resolve(bind.target);
    if (point === bind.target) {
      if (real === undefined)
        throw new Error(`lab: cannot bind ${bind.source} over ${bind.target}: it does not exist`);
      continue;
    }
    ensure(point, file);
  }
}

function ensure(file: string, isFile: boolean): void {
  if (fs.existsSync(file)) return;
  if (!isFile) {
    fs.mkdirSync(file, { recursive: true });
    return;
  }
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, "", { flag: "a" });
}
