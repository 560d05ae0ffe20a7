import { constants } from "node:fs";

/**
 * What an fs function does with its path arguments, as the system call behind it does: which
 * arguments are paths, whether a final symlink is followed or acted on itself (lstat, unlink,
 * rename), and which paths it writes. The tool server's fs facade (./tool-call.ts) resolves each
 * path in the node's view with this, so a tool's fs call means what the same call means inside
 * the node's mount namespace — including EROFS where the node's view is read-only.
 */

export type PathArgument = { index: number; follow: boolean; writes: boolean };

const FOLLOWS_NOT = new Set([
  "lstat",
  "readlink",
  "unlink",
  "rm",
  "rmdir",
  "rename",
  "symlink",
  "link",
  "lchown",
  "lutimes",
  "lchmod",
  "mkdir",
  "mkdtemp",
]);

/** Writes at every path it is given. */
const WRITES = new Set([
  "writeFile",
  "appendFile",
  "mkdir",
  "mkdtemp",
  "rm",
  "rmdir",
  "unlink",
  "rename",
  "truncate",
  "chmod",
  "chown",
  "lchown",
  "utimes",
  "lutimes",
  "lchmod",
  "createWriteStream",
]);

/** Reads its first path, writes its second. */
const WRITES_SECOND = new Set(["copyFile", "cp", "link"]);

const WRITE_FLAGS =
  constants.O_WRONLY |
  constants.O_RDWR |
  constants.O_CREAT |
  constants.O_TRUNC |
  constants.O_APPEND;

/** The path arguments of `fs.<name>(…args)` (`name` without `Sync`). */
export function pathArguments(name: string, args: readonly unknown[]): PathArgument[] {
  if (name === "symlink") {
    // symlink(target, path): the target is stored as given, never resolved.
    return [{ index: 1, follow: false, writes: true }];
  }
  const count = WRITES_SECOND.has(name) || name === "rename" ? 2 : 1;
  const found: PathArgument[] = [];
  for (let index = 0; index < count; index++) {
    found.push({
      index,
      follow: !FOLLOWS_NOT.has(name),
      writes:
        WRITES.has(name) || (WRITES_SECOND.has(name) && index === 1) || opensForWriting(name, args),
    });
  }
  return found;
}

/** open(path, flags) / access(path, mode) asking for write access. */
function opensForWriting(name: string, args: readonly unknown[]): boolean {
  const second = args[1];
  if (name === "open") {
    if (typeof second === "string") return /[wa+]/.test(second);
    return typeof second === "number" && (second & WRITE_FLAGS) !== 0;
  }
  if (name === "access") return typeof second === "number" && (second & constants.W_OK) !== 0;
  return false;
}

/** Functions whose result is a path (converted back into the node's view). */
export const RETURNS_PATH = new Set(["realpath", "mkdtemp"]);

/** The system call Node names in an fs function's errors, where it is not the function's name. */
const SYSCALL: Record<string, string> = {
  writeFile: "open",
  appendFile: "open",
  createWriteStream: "open",
  truncate: "open",
  copyFile: "copyfile",
  utimes: "utime",
  lutimes: "lutime",
};

/** The error a write into the node's read-only view gets, shaped like Node's own. */
export function readOnlyError(name: string, given: string): NodeJS.ErrnoException {
  const syscall = SYSCALL[name] ?? name;
  const error: NodeJS.ErrnoException = new Error(
    `EROFS: read-only file system, ${syscall} '${given}'`,
  );
  error.code = "EROFS";
  error.errno = -30;
  error.syscall = syscall;
  error.path = given;
  return error;
}
