import type { Database } from "@/lib/db/client";
import type { ExecOptions, ExecResult } from "@/lib/ssh";
import { sh } from "@/lib/ssh";
import { appendRunLog, readSourcePosition, type SourcePosition } from "./append";
import type { LogEntry } from "./chunks";
import { completeUtf8Length, LineSplitter } from "./line-splitter";

/** What a tail needs from an SSH session (a root-wrapped exec works as well as the session). */
export type RemoteExec = {
  exec(command: string, options?: ExecOptions): Promise<ExecResult>;
};

/** Bytes read per command: one visit never pulls an unbounded file through one channel. */
export const TAIL_READ_BYTES = 4 * 1024 * 1024;
/** The file's first bytes whose checksum tells "same file, grown" from "new file, same inode". */
const IDENTITY_BYTES = 256;
const MISSING_EXIT = 3;

export type TailResult = {
  /** Complete lines read (raw: `appendRunLog` folds and masks them). */
  lines: string[];
  /** The file was recreated since the last read: the lines start at its byte 0. */
  recreated: boolean;
  /** The file does not exist (yet): nothing was read, the position is unchanged. */
  missing: boolean;
  /** The read stopped at TAIL_READ_BYTES: more is waiting. */
  more: boolean;
  position: SourcePosition;
};

/**
 * The shell side of a tail: opens the file once (fd 3), so its identity and its bytes come from
 * the same file even if it is replaced meanwhile; prints inode, size, the checksum of the first
 * 256 bytes and the offset it starts from on stderr, then the new bytes on stdout.
 *
 * Starts over at 0 when the file is not the one read before: another inode (recreated by
 * `mv`/`rm`), smaller than the offset (truncated), or other first bytes (truncated in place and
 * rewritten past the old offset before this poll — `: > build.log` keeps the inode).
 */
export function tailCommand(
  path: string,
  position: Pick<SourcePosition, "offset" | "inode">,
  maxBytes = TAIL_READ_BYTES,
): string {
  const identity = parseIdentity(position.inode);
  const offset = String(Math.max(0, Math.floor(position.offset)));
  return [
    sh`f=${path}`,
    `[ -e "$f" ] || { echo missing >&2; exit ${MISSING_EXIT}; }`,
    `exec 3<"$f" || exit 4`,
    `is=$(stat -L -c '%i %s' /dev/fd/3) || exit 4`,
    `inode=\${is% *}; size=\${is#* }`,
    sh`new=$(head -c ${String(IDENTITY_BYTES)} /dev/fd/3 | cksum)`,
    // The old identity's checksum over as many bytes as it covered: the new one's when that is
    // the same length (every file past its first 256 bytes), none on a first read (no inode).
    identity === null
      ? "old="
      : identity.length === IDENTITY_BYTES
        ? "old=$new"
        : sh`old=$(head -c ${String(identity.length)} /dev/fd/3 | cksum)`,
    sh`start=${offset}`,
    sh`if [ "$inode" != ${identity?.inode ?? ""} ] || [ "$size" -lt "$start" ] || [ "$old" != ${identity?.checksum ?? ""} ]; then start=0; fi`,
    `printf '%s\\n%s\\n%s\\n' "$inode" "$new" "$start" >&2`,
    sh`tail -c +$((start + 1)) /dev/fd/3 | head -c ${String(maxBytes)}`,
  ].join("\n");
}

type Identity = { inode: string; checksum: string; length: number };

/** `inode` column: `<inode>|<cksum output of the first bytes>` (cksum prints sum and length). */
function parseIdentity(value: string | null): Identity | null {
  if (!value) return null;
  const [inode, checksum] = value.split("|");
  if (!inode || !checksum) return null;
  const length = Number(checksum.trim().split(/\s+/)[1] ?? 0);
  return { inode, checksum, length: Number.isFinite(length) ? length : 0 };
}

/**
 * Reads what was appended to `path` on the host since `position`, by byte offset: only new
 * bytes cross the wire. Returns the complete lines, the new position (offset after the last
 * byte consumed; an unterminated last line is carried in `pending`, never re-read) and whether
 * the file was recreated. Pure with respect to storage: the caller saves `position` together
 * with the lines (`tailIntoRunLog`), which is what makes a restart neither skip nor repeat.
 */
export async function tailRemoteFile(
  session: RemoteExec,
  path: string,
  position: SourcePosition,
  options: { maxBytes?: number; timeoutMs?: number } = {},
): Promise<TailResult> {
  const maxBytes = options.maxBytes ?? TAIL_READ_BYTES;
  const parts: Buffer[] = [];
  const result = await session.exec(tailCommand(path, position, maxBytes), {
    timeoutMs: options.timeoutMs ?? 60_000,
    maxOutputBytes: 64 * 1024,
    onOutput: (stream, chunk) => {
      if (stream === "stdout") parts.push(chunk);
    },
  });
  if (result.code === MISSING_EXIT && result.stderr.includes("missing")) {
    return { lines: [], recreated: false, missing: true, more: false, position };
  }
  const [inode, checksum, startText] = result.stderr.trim().split("\n").slice(-3);
  if (result.code !== 0 || !inode || !checksum || startText === undefined) {
    throw new Error(
      `reading ${path} on the host failed (exit ${result.code ?? result.signal}): ${result.stderr.trim().slice(0, 300)}`,
    );
  }
  const start = Number(startText);
  const bytes = Buffer.concat(parts);
  const recreated = position.inode !== null && start !== position.offset;
  const lines: string[] = [];
  let pending = position.pending;
  if (recreated) {
    // The old file's unterminated last line is all that is left of it: keep it.
    if (pending.length > 0) lines.push(pending);
    pending = "";
  }
  const usable = completeUtf8Length(bytes);
  const splitter = new LineSplitter(pending);
  lines.push(...splitter.push(bytes.subarray(0, usable).toString("utf8")));
  const overlong = splitter.takeOverlong();
  if (overlong !== null) lines.push(overlong);
  return {
    lines,
    recreated,
    missing: false,
    more: bytes.length >= maxBytes,
    position: {
      path,
      offset: start + usable,
      inode: `${inode}|${checksum}`,
      pending: splitter.pending,
    },
  };
}

export const RECREATED_MARKER = (path: string) =>
  `──── ${path} was recreated on the host: reading the new file from its start ────`;

/**
 * One poll of a host file into the run log: reads from the stored position, appends the lines
 * and saves the new position in one transaction; repeats while the file has more than one read
 * holds (bounded by `maxReads`). With `finish`, the unterminated last line is written too (the
 * writer of the file is done). This runs in a step's visit, never per viewer: when nobody
 * watches, nothing extra runs on the host.
 */
export async function tailIntoRunLog(options: {
  db: Database;
  session: RemoteExec;
  runId: string;
  step: string;
  path: string;
  secrets?: readonly string[];
  finish?: boolean;
  maxReads?: number;
  maxBytes?: number;
}): Promise<{
  lines: number;
  missing: boolean;
  recreated: boolean;
  /** Where the run log's copy of the file ends now (what a waiter streams on from). */
  position: SourcePosition;
  /** The last line this copy wrote (raw), null when it wrote none. */
  lastLine: string | null;
}> {
  let total = 0;
  let recreatedAny = false;
  let lastLine: string | null = null;
  let position = await readSourcePosition(options.db, options.runId, options.path);
  for (let read = 0; read < (options.maxReads ?? 8); read++) {
    const result = await tailRemoteFile(options.session, options.path, position, {
      maxBytes: options.maxBytes,
    });
    if (result.missing)
      return { lines: total, missing: true, recreated: recreatedAny, position, lastLine };
    const at = new Date();
    const entry = (kind: LogEntry["kind"], text: string): LogEntry => ({
      step: options.step,
      kind,
      text,
      at,
    });
    const entries: LogEntry[] = [];
    let lines = result.lines;
    if (result.recreated) {
      recreatedAny = true;
      const kept = position.pending.length > 0 ? 1 : 0;
      entries.push(...lines.slice(0, kept).map((line) => entry("file", line)));
      entries.push(entry("marker", RECREATED_MARKER(options.path)));
      lines = lines.slice(kept);
    }
    entries.push(...lines.map((line) => entry("file", line)));
    const finishing = options.finish && !result.more;
    if (finishing && result.position.pending.length > 0) {
      entries.push(entry("file", result.position.pending));
    }
    const source = { ...result.position, pending: finishing ? "" : result.position.pending };
    // A poll that found nothing new has nothing to store: no transaction, no head lock.
    if (entries.length === 0 && samePosition(source, position)) break;
    await appendRunLog(options.db, options.runId, entries, { secrets: options.secrets, source });
    position = source;
    total += result.lines.length;
    const last = entries.findLast((entry) => entry.kind === "file");
    if (last !== undefined) lastLine = last.text;
    if (!result.more) break;
  }
  return { lines: total, missing: false, recreated: recreatedAny, position, lastLine };
}

function samePosition(a: SourcePosition, b: SourcePosition): boolean {
  return a.offset === b.offset && a.inode === b.inode && a.pending === b.pending;
}
