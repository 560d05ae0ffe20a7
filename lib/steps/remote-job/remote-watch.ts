import { sh } from "@/lib/ssh";

/**
 * Watching detached work on the host between visits (docs/pipeline.md, "Waiting"): a visit
 * that polls prints the **signature** of the status it decided on, and the worker's waiter then
 * runs a small shell loop over the host's kept SSH connection that exits as soon as the
 * signature differs from that one — no inotify-tools on a fresh Debian. The checksum is taken
 * once, against the console's baseline; after that each round compares the status text itself
 * in a shell variable: in bash a round costs the host no process at all (see `nap`).
 *
 * The signature covers the first line of each status file and whether the PID the pid files
 * name is a live, non-zombie process. It is a checksum (digits), so the baseline survives the
 * trip through the console byte for byte whatever the files hold; a phase text that is not
 * UTF-8 cannot make the loop return at once forever.
 *
 * The loop ends by itself: it prints a dot every round, so once the console's side of the
 * channel is gone (a worker killed, a connection dropped) the next write ends it (SIGPIPE), and
 * it gives up after the poll interval whatever happens, before the poll's own tick is due.
 */
export type WatchedStatus = {
  /** The status dir as a shell word, resolved on the host. */
  dir: string;
  /** Files whose first line the next visit decides on (state, exit …): a change ends the watch. */
  files: readonly string[];
  /**
   * A file whose first line is only shown (a phase): the watch reports each one that differs
   * from what the visit showed (`shown` events) and goes on watching. Not in the signature: a
   * new phase never costs a visit.
   */
  shown?: string;
  /** Files that may hold the work's PID; the first that holds a number names it. */
  pidFiles: readonly string[];
};

/**
 * A log file the watch streams while it waits, from where the console's copy of it ends (a
 * `run_log_sources` position, lib/logs/append.ts): the run log stays live between visits
 * without a visit. Only complete lines cross; the loop keeps an unterminated last line until
 * its newline comes.
 */
export type FollowedFile = {
  /** The file's absolute path on the host. */
  path: string;
  /** Bytes of it the console has consumed. */
  offset: number;
  /**
   * `<inode>|<cksum of its first bytes>` as the tail stored it (lib/logs/tail-remote-file.ts),
   * or null before the first read. Another inode, or a file shorter than `offset`, is a new
   * file: it is streamed from byte 0 and the watch reports its identity (`file` event).
   */
  identity: string | null;
};

const SIGNATURE_MARK = "clupilot-watch-signature:";
const CHANGED = "clupilot-watch: changed";
const UNCHANGED = "clupilot-watch: unchanged";
/** Progress the loop reports while it waits, one per line (a round's dot may precede it). */
const SHOWN_MARK = "clupilot-watch-shown:";
const FILE_MARK = "clupilot-watch-file:";
const LINE_MARK = "clupilot-watch-line:";
const AT_MARK = "clupilot-watch-at:";
const FILE_NAME = /^[a-z][a-z0-9.-]*$/;

/** Rounds of the loop per second: the change reaches the console within one round. */
export const WATCH_ROUND_SECONDS = 0.5;

/**
 * Defines `clupilot_sig`, which sets `key` to the status as the signature counts it (a line per
 * decision file, then the PID's) and `shown` to the shown file's first line; in variables, not
 * printed, so a round needs no subshell.
 */
function signatureFunction(watched: WatchedStatus): string[] {
  const shown = watched.shown === undefined ? [] : [watched.shown];
  for (const name of [...watched.files, ...shown, ...watched.pidFiles])
    if (!FILE_NAME.test(name)) throw new Error(`not a status file name: ${name}`);
  return [
    `wd=${watched.dir}`,
    "clupilot_sig() {",
    "  key=",
    `  for f in ${watched.files.join(" ")}; do`,
    `    v=; { IFS= read -r v < "$wd/$f"; } 2>/dev/null`,
    `    key="$key$f=$v`,
    `"`,
    "  done",
    watched.shown === undefined
      ? "  shown="
      : `  shown=; { IFS= read -r shown < "$wd/${watched.shown}"; } 2>/dev/null`,
    "  p=",
    `  for f in ${watched.pidFiles.join(" ")}; do`,
    `    p=; { IFS= read -r p < "$wd/$f"; } 2>/dev/null`,
    `    case "$p" in ''|*[!0-9]*) p= ;; *) break ;; esac`,
    "  done",
    // Alive, not a zombie (a container's PID 1 may never reap it): the third field of stat.
    "  s=dead",
    `  if [ -n "$p" ] && { IFS= read -r st < "/proc/$p/stat"; } 2>/dev/null; then`,
    `    st=\${st##*) }; case "\${st%% *}" in Z|X|'') ;; *) s=alive ;; esac`,
    "  fi",
    `  key="\${key}pid=$p $s`,
    `"`,
    "}",
  ];
}

/**
 * Defines `clupilot_sum`, which sets `sum` to the checksum of `key` (digits): what crosses to
 * the console and back as the baseline. A here-document, not `printf | cksum`: one process
 * fewer on every status read and watch.
 */
const SUM_FUNCTION = [
  "clupilot_sum() {",
  "  sum=$(cksum <<SIGNATURE_END",
  "$key",
  "SIGNATURE_END",
  ")",
  "}",
];

/** Lines for a status read: the signature on a line of its own, the next watch's baseline. */
export function printSignature(watched: WatchedStatus): string {
  return [
    ...signatureFunction(watched),
    ...SUM_FUNCTION,
    "clupilot_sig",
    "clupilot_sum",
    `printf '${SIGNATURE_MARK}%s\\n' "$sum"`,
  ].join("\n");
}

/** The signature line `printSignature` printed, and the output without it. */
export function takeSignature(stdout: string): { signature: string | null; rest: string } {
  const lines = stdout.split("\n");
  const index = lines.findIndex((line) => line.startsWith(SIGNATURE_MARK));
  if (index < 0) return { signature: null, rest: stdout };
  const signature = lines[index]!.slice(SIGNATURE_MARK.length).trim() || null;
  lines.splice(index, 1);
  return { signature, rest: lines.join("\n") };
}

/**
 * `nap`: one round's pause. In bash (root's login shell on Debian, what sshd runs a command
 * with) a `read -t` on a FIFO only this shell holds open, which never has data: the pause costs
 * no process. In another shell (dash, for a non-root user's `sudo -n sh -c`), or when no FIFO
 * can be made, `sleep`. The FIFO is unlinked as soon as it is open.
 */
const NAP_FUNCTION = [
  `if [ -n "\${BASH_VERSION:-}" ] && f=$(mktemp -u /tmp/clupilot-watch.XXXXXXXX) && mkfifo -m 600 "$f" 2>/dev/null; then`,
  `  exec 3<>"$f"; rm -f "$f"`,
  `  nap() { read -r -t ${WATCH_ROUND_SECONDS} -u 3 _; [ $? -gt 128 ] || sleep ${WATCH_ROUND_SECONDS}; }`,
  "else",
  `  nap() { sleep ${WATCH_ROUND_SECONDS}; }`,
  "fi",
];

/**
 * Streams the followed file (`FollowedFile`) in bash or dash alike: the file is held open on
 * fd 4 and placed at the console's offset once (`dd … count=0` seeks, it reads nothing); each
 * round the shell's own `read` takes the complete lines since (no process), and the position
 * the kernel keeps for fd 4 (`/proc/$$/fdinfo/4`) says exactly where they end. A file that is
 * not there yet is opened on a later round. Lines are bytes as they are (`LC_ALL=C`: `${#v}`
 * counts bytes).
 */
function followFunctions(followed: FollowedFile): string[] {
  if (!followed.path.startsWith("/")) throw new Error(`not an absolute path: ${followed.path}`);
  if (!Number.isInteger(followed.offset) || followed.offset < 0)
    throw new Error(`not a file offset: ${followed.offset}`);
  return [
    sh`fl=${followed.path}; fo=${followed.offset}; fid=${followed.identity ?? ""}`,
    "following=; part=",
    `clupilot_pos() { pos=; { IFS= read -r pos < "/proc/$$/fdinfo/4"; } 2>/dev/null; pos=\${pos#pos:}; pos=\${pos#"\${pos%%[0-9]*}"}; }`,
    "clupilot_open() {",
    '  [ -r "$fl" ] || return 0',
    '  command exec 4<"$fl" 2>/dev/null || return 0',
    "  is=$(stat -L -c '%i %s' /dev/fd/4 2>/dev/null) || { exec 4<&-; return 0; }",
    "  start=$fo",
    '  if [ -z "$fid" ] || [ "${is% *}" != "${fid%%|*}" ] || [ "${is#* }" -lt "$fo" ]; then',
    '    start=0; fid="${is% *}|$(head -c 256 /dev/fd/4 | cksum)"',
    `    printf '\\n%s%s\\n' '${FILE_MARK}' "$fid"`,
    "  fi",
    '  if [ "$start" -gt 0 ]; then dd bs=1 skip="$start" count=0 <&4 2>/dev/null; fi',
    "  clupilot_pos",
    // Not where it should be: nothing streams this time; the next visit's tail reads it.
    '  if [ "$pos" != "$start" ]; then exec 4<&-; fl=; return 0; fi',
    "  following=1",
    "}",
    "clupilot_follow() {",
    '  if [ -z "$following" ]; then [ -n "$fl" ] && clupilot_open; [ -n "$following" ] || return 0; fi',
    "  n=",
    `  while IFS= read -r l <&4; do printf '\\n%s%s%s\\n' '${LINE_MARK}' "$part" "$l"; part=; n=1; done`,
    '  part="$part$l"',
    `  if [ -n "$n" ]; then clupilot_pos; printf '%s%s\\n' '${AT_MARK}' "$((pos - \${#part}))"; fi`,
    "}",
  ];
}

/**
 * Waits on the host until the status's signature differs from `baseline` (prints `changed`),
 * or about `seconds` less one have passed (prints `unchanged`: the poll's tick follows).
 * Meanwhile it reports each new first line of the shown file, and streams the followed file's
 * new lines: the run stays live between visits, and only what the next visit decides on wakes
 * it. The log is read before the status in each round, so a phase it reports is never older
 * than a line it streamed (a writer writes the phase before the phase's log line).
 */
export function watchStatusCommand(
  watched: WatchedStatus,
  baseline: string,
  seconds: number,
  options: {
    /** The shown file's line as the visit showed it (a new one is reported in the first round). */
    shownSeen?: string;
    followed?: FollowedFile;
  } = {},
): string {
  const { followed } = options;
  const rounds = Math.max(1, Math.floor((seconds - 1) / WATCH_ROUND_SECONDS));
  const follow = followed === undefined ? [] : followFunctions(followed);
  return [
    "LC_ALL=C",
    ...signatureFunction(watched),
    sh`base=${baseline}`,
    ...SUM_FUNCTION,
    "clupilot_sig",
    "clupilot_sum",
    `if [ "$sum" != "$base" ]; then echo '${CHANGED}'; exit 0; fi`,
    options.shownSeen === undefined
      ? "seen=$key; shown_seen=$shown"
      : sh`seen=$key; shown_seen=${options.shownSeen}`,
    ...follow,
    ...NAP_FUNCTION,
    "i=0",
    `while [ "$i" -lt ${rounds} ]; do`,
    ...(followed === undefined ? [] : ["  clupilot_follow"]),
    "  clupilot_sig",
    `  if [ "$key" != "$seen" ]; then printf '\\n%s\\n' '${CHANGED}'; exit 0; fi`,
    `  if [ "$shown" != "$shown_seen" ]; then shown_seen=$shown; printf '\\n%s%s\\n' '${SHOWN_MARK}' "$shown"; fi`,
    "  printf .",
    "  nap",
    "  i=$((i + 1))",
    "done",
    ...(followed === undefined ? [] : ["clupilot_follow"]),
    `printf '\\n%s\\n' '${UNCHANGED}'`,
  ].join("\n");
}

/** What the watch loop reports, in the order it printed it. */
export type WatchEvent =
  | { kind: "verdict"; changed: boolean }
  /** The shown file's new first line (a phase). */
  | { kind: "shown"; text: string }
  /** The followed file is not the one the console read before: what follows is from byte 0. */
  | { kind: "file"; identity: string }
  /** A complete line of the followed file (without its newline). */
  | { kind: "line"; text: string }
  /** The followed file's lines so far end at this byte offset. */
  | { kind: "at"; offset: number };

/**
 * Reads the watch loop's output as it arrives: splits it into lines by bytes (a log line's
 * UTF-8 decoded whole, never cut inside a character), drops the rounds' dots, and turns the
 * marker lines into events. Anything else is ignored: only a line that IS a verdict counts, so
 * a streamed log line can never pass for one.
 */
export class WatchOutput {
  private pending: Buffer[] = [];
  private verdict: boolean | null = null;

  push(chunk: Buffer): WatchEvent[] {
    const events: WatchEvent[] = [];
    let from = 0;
    for (let nl = chunk.indexOf(0x0a); nl >= 0; nl = chunk.indexOf(0x0a, from)) {
      this.pending.push(chunk.subarray(from, nl));
      const line = Buffer.concat(this.pending);
      this.pending = [];
      const event = this.parse(line);
      if (event !== null) events.push(event);
      from = nl + 1;
    }
    if (from < chunk.length) this.pending.push(chunk.subarray(from));
    return events;
  }

  /** Whether the loop saw a change; throws when it ended without saying (it did not run as written). */
  changed(): boolean {
    if (this.verdict === null)
      throw new Error("the watch loop ended without saying whether anything changed");
    return this.verdict;
  }

  private parse(raw: Buffer): WatchEvent | null {
    let start = 0;
    while (start < raw.length && raw[start] === 0x2e) start++;
    const line = raw.subarray(start).toString("utf8");
    if (line === CHANGED || line === UNCHANGED) {
      this.verdict = line === CHANGED;
      return { kind: "verdict", changed: this.verdict };
    }
    if (line.startsWith(LINE_MARK)) return { kind: "line", text: line.slice(LINE_MARK.length) };
    if (line.startsWith(AT_MARK)) {
      const offset = Number(line.slice(AT_MARK.length));
      return Number.isSafeInteger(offset) && offset >= 0 ? { kind: "at", offset } : null;
    }
    if (line.startsWith(SHOWN_MARK)) return { kind: "shown", text: line.slice(SHOWN_MARK.length) };
    if (line.startsWith(FILE_MARK)) return { kind: "file", identity: line.slice(FILE_MARK.length) };
    return null;
  }
}

/** What the watch loop said, from its whole output; anything else means it did not run as written. */
export function watchSawChange(stdout: string): boolean {
  const output = new WatchOutput();
  output.push(Buffer.from(`${stdout}\n`));
  return output.changed();
}
