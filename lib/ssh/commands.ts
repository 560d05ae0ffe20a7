import path from "node:path";

import { sh } from "./quote";

/**
 * Command builders of the SSH layer itself. Pure functions: every command the layer sends is
 * built here, so `commands.test.ts` can run each one through `sh -n` without SSH.
 */

/** File mode as the 4-digit octal string `chmod` expects (`0644`). */
export function formatMode(mode: number): string {
  if (!Number.isInteger(mode) || mode < 0 || mode > 0o7777) {
    throw new Error(`invalid file mode ${String(mode)} (expected 0..0o7777)`);
  }
  return mode.toString(8).padStart(4, "0");
}

export type UploadCommandInput = {
  /** Final path on the host. */
  remotePath: string;
  /** Temporary sibling (same directory, so the final `mv` is an atomic rename). */
  tmpPath: string;
  mode: number;
  /** Lower-case hex SHA-256 of the bytes sent on stdin. */
  sha256: string;
};

/** Exit status of the upload command when the bytes on the host differ from the ones sent. */
export const UPLOAD_CHECKSUM_MISMATCH_EXIT = 3;

/**
 * Receives the file on stdin into a temporary sibling, sets its mode, checks its SHA-256
 * against what was sent, and only then renames it over the target. A cut connection, a full
 * disk or a mangled stream therefore never leaves a half-written file under the real name
 * (the trap removes the temporary file on every exit path, including SIGHUP at channel close).
 * Prints the SHA-256 of the final file, which the client checks once more.
 */
export function uploadCommand(input: UploadCommandInput): string {
  if (input.remotePath === "" || input.remotePath.endsWith("/")) {
    throw new Error(`upload target must be a file path, got ${JSON.stringify(input.remotePath)}`);
  }
  if (!/^[0-9a-f]{64}$/.test(input.sha256)) {
    throw new Error("upload sha256 must be 64 lower-case hex digits");
  }
  const dir = path.posix.dirname(input.remotePath);
  const mode = formatMode(input.mode);
  const tmp = input.tmpPath;
  return [
    "set -eu",
    // The trap action is parsed again when it runs, so the path inside it is quoted twice.
    // rm only when the file is still there: after the move, one process less per upload.
    sh`trap ${sh`[ ! -e ${tmp} ] || rm -f -- ${tmp}`} EXIT`,
    "trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 143' TERM",
    "umask 022",
    sh`[ -d ${dir} ] || mkdir -p -- ${dir}`,
    "umask 077",
    sh`cat > ${tmp}`,
    sh`chmod ${mode} -- ${tmp}`,
    sh`got=$(sha256sum < ${tmp})`,
    'got="${got%% *}"',
    sh`if [ "$got" != ${input.sha256} ]; then`,
    sh`  echo "sha256 on the host is $got, sent "${input.sha256} >&2`,
    `  exit ${UPLOAD_CHECKSUM_MISMATCH_EXIT}`,
    "fi",
    // -T: never move *into* a directory that happens to carry the target's name.
    sh`mv -f -T -- ${tmp} ${input.remotePath}`,
    sh`sha256sum < ${input.remotePath}`,
  ].join("\n");
}

/** First line the wrapped command writes to stderr: the process-group id of its shell. */
export const GROUP_MARKER = "clupilot-pgid:";

/**
 * Wraps a command so it first reports its shell's PID on stderr. sshd starts every session's
 * shell with setsid() (the lab does the same), so that PID is the command's process group:
 * the handle to stop the remote work when we give up on it — closing the channel does not
 * (sshd sends no signal on channel close, and refuses signal requests for root sessions).
 */
export function withGroupMarker(command: string): string {
  return `printf '${GROUP_MARKER}%s\\n' "$$" >&2; ${command}`;
}

/**
 * Stops a process group we started, TERM then KILL after a grace period — only while the PID
 * still leads a group of that number (evidence it is still ours, not a reused PID).
 */
export function killGroupCommand(pgid: number, graceSeconds = 2): string {
  if (!Number.isInteger(pgid) || pgid <= 1) throw new Error(`not a process group id: ${pgid}`);
  const same = `[ "$(ps -o pgid= -p ${pgid} 2>/dev/null | tr -d ' ')" = "${pgid}" ]`;
  return [
    `if ${same}; then kill -TERM -- -${pgid} 2>/dev/null; else exit 0; fi`,
    `i=0; while kill -0 -- -${pgid} 2>/dev/null && [ $i -lt ${graceSeconds * 10} ]; do sleep 0.1; i=$((i + 1)); done`,
    `kill -KILL -- -${pgid} 2>/dev/null; exit 0`,
  ].join("\n");
}
