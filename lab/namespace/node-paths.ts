import fs from "node:fs";

import type { Bind } from "./layout";

/**
 * A lab node's file system as its own processes see it, for code that runs outside the node's
 * mount namespace (the tool server): node paths in, real paths out. It walks a path component by
 * component as the kernel does inside the namespace — each prefix through the bind it lies in,
 * symlinks read and followed in the node's view (`/var/run` → `/run` is the node's `/run`, not the
 * machine's) — so the file a tool opens is the file the node's bash opens. What no bind covers
 * is the real system's, read-only as in the namespace (./mount-binds makes `/` read-only there).
 */

/** Linux's limit of symlinks followed in one lookup (MAXSYMLINKS). */
const MAX_SYMLINKS = 40;

type Entry = Bind & { prefix: string };

/** A mount of the real system: inside the namespace it keeps its flags, except `/`. */
export type RealMount = { point: string; readOnly: boolean };

export class NodePaths {
  /** Longest target first: the innermost mount wins. */
  private readonly byTarget: Entry[];
  /** Longest source first, for the way back. */
  private readonly bySource: Entry[];

  /** Longest mount point first; `/` left out (read-only inside the node). */
  private readonly mounts: RealMount[];

  constructor(binds: readonly Bind[], mounts: readonly RealMount[] = realMounts()) {
    const entries = binds.map((bind) => ({ ...bind, prefix: withSlash(bind.target) }));
    this.byTarget = [...entries].sort((a, b) => b.target.length - a.target.length);
    this.bySource = [...entries].sort((a, b) => b.source.length - a.source.length);
    // Reversed first: of two mounts on one point the later one is what a lookup sees.
    this.mounts = [...mounts]
      .reverse()
      .filter((mount) => mount.point !== "/")
      .sort((a, b) => b.point.length - a.point.length);
  }

  /**
   * The real path of what the absolute node path `nodePath` names. With `follow` false a final
   * symlink is left unresolved (lstat, readlink, unlink, rename act on the link itself).
   */
  resolve(nodePath: string, follow = true): string {
    if (!nodePath.startsWith("/")) throw new Error(`lab: not an absolute node path: ${nodePath}`);
    const done: string[] = [];
    const todo = nodePath.split("/").filter((part) => part !== "");
    let links = 0;
    while (todo.length > 0) {
      const part = todo.shift()!;
      if (part === ".") continue;
      if (part === "..") {
        done.pop();
        continue;
      }
      const candidate = [...done, part];
      if (todo.length === 0 && !follow) {
        done.push(part);
        break;
      }
      const real = this.direct(`/${candidate.join("/")}`);
      const stat = lstatOrNull(real);
      if (stat === null) {
        // Nothing there: the kernel stops here too. The rest goes as given, so the caller's
        // call fails (ENOENT, ENOTDIR) or creates the last part, as inside the node.
        return [real, ...todo].join("/") + (nodePath.endsWith("/") ? "/" : "");
      }
      if (stat.isSymbolicLink()) {
        if (++links > MAX_SYMLINKS) throw loopError(nodePath);
        const target = fs.readlinkSync(real);
        if (target.startsWith("/")) done.length = 0;
        todo.unshift(...target.split("/").filter((p) => p !== ""));
        continue;
      }
      done.push(part);
    }
    const real = this.direct(`/${done.join("/")}`);
    return nodePath.endsWith("/") && real !== "/" ? `${real}/` : real;
  }

  /** The node path of a real path (what realpath or mkdtemp return, what an error names). */
  toNode(realPath: string): string {
    for (const entry of this.bySource) {
      if (realPath === entry.source) return entry.target;
      if (realPath.startsWith(withSlash(entry.source)))
        return `${entry.prefix}${realPath.slice(withSlash(entry.source).length)}`;
    }
    return realPath;
  }

  /**
   * Whether the node may write at this real path: inside one of its binds unless that is
   * read-only; elsewhere as the real mount it lies on allows (`/dev`, `/proc`), never on `/`.
   */
  writable(realPath: string): boolean {
    const within = (dir: string) => realPath === dir || realPath.startsWith(withSlash(dir));
    const bind = this.bySource.find((entry) => within(entry.source));
    if (bind !== undefined) return !bind.readOnly;
    const mount = this.mounts.find((entry) => within(entry.point));
    return mount !== undefined && !mount.readOnly;
  }

  /** The real path of a node path without symlinks: the bind it lies in, or the machine's. */
  private direct(nodePath: string): string {
    for (const entry of this.byTarget) {
      if (nodePath === entry.target) return entry.source;
      if (nodePath.startsWith(entry.prefix))
        return `${withSlash(entry.source)}${nodePath.slice(entry.prefix.length)}`;
    }
    return nodePath;
  }
}

/** The machine's mounts as this process sees them (`/proc/self/mountinfo`). */
export function realMounts(): RealMount[] {
  let text: string;
  try {
    text = fs.readFileSync("/proc/self/mountinfo", "utf8");
  } catch {
    return [];
  }
  const unescape = (field: string) =>
    field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
  return text
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => {
      const fields = line.split(" ");
      return {
        point: unescape(fields[4] ?? ""),
        readOnly: (fields[5] ?? "").split(",").includes("ro"),
      };
    });
}

function withSlash(dir: string): string {
  return dir.endsWith("/") ? dir : `${dir}/`;
}

function lstatOrNull(file: string): fs.Stats | null {
  try {
    return fs.lstatSync(file);
  } catch {
    return null;
  }
}

function loopError(nodePath: string): NodeJS.ErrnoException {
  const error: NodeJS.ErrnoException = new Error(
    `ELOOP: too many symbolic links encountered, stat '${nodePath}'`,
  );
  error.code = "ELOOP";
  error.errno = -40;
  error.path = nodePath;
  return error;
}
