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
  /** Files whose first line counts (state, phase, exit …). */
  files: readonly string[];
  /** Files that may hold the work's PID; the first that holds a number names it. */
  pidFiles: readonly string[];
};

const SIGNATURE_MARK = "clupilot-watch-signature:";
const CHANGED = "clupilot-watch: changed";
const UNCHANGED = "clupilot-watch: unchanged";
const FILE_NAME = /^[a-z][a-z0-9.-]*$/;

/** Rounds of the loop per second: the change reaches the console within one round. */
export const WATCH_ROUND_SECONDS = 0.5;

/**
 * Defines `clupilot_sig`, which sets `sig` to the status as the signature counts it (a line per
 * file, then the PID's); in a variable, not printed, so a round needs no subshell.
 */
function signatureFunction(watched: WatchedStatus): string[] {
  for (const name of [...watched.files, ...watched.pidFiles])
    if (!FILE_NAME.test(name)) throw new Error(`not a status file name: ${name}`);
  return [
    `wd=${watched.dir}`,
    "clupilot_sig() {",
    "  sig=",
    `  for f in ${watched.files.join(" ")}; do`,
    `    v=; { IFS= read -r v < "$wd/$f"; } 2>/dev/null`,
    `    sig="$sig$f=$v`,
    `"`,
    "  done",
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
    `  sig="\${sig}pid=$p $s`,
    `"`,
    "}",
  ];
}

/**
 * Defines `clupilot_sum`, which sets `sum` to the checksum of `sig` (digits): what crosses to
 * the console and back as the baseline. A here-document, not `printf | cksum`: one process
 * fewer on every status read and watch.
 */
const SUM_FUNCTION = [
  "clupilot_sum() {",
  "  sum=$(cksum <<SIGNATURE_END",
  "$sig",
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
 * Waits on the host until the status's signature differs from `baseline` (prints `changed`),
 * or about `seconds` less one have passed (prints `unchanged`: the poll's tick follows).
 */
export function watchStatusCommand(
  watched: WatchedStatus,
  baseline: string,
  seconds: number,
): string {
  const rounds = Math.max(1, Math.floor((seconds - 1) / WATCH_ROUND_SECONDS));
  return [
    ...signatureFunction(watched),
    sh`base=${baseline}`,
    ...SUM_FUNCTION,
    "clupilot_sig",
    "clupilot_sum",
    `if [ "$sum" != "$base" ]; then echo '${CHANGED}'; exit 0; fi`,
    "seen=$sig",
    ...NAP_FUNCTION,
    "i=0",
    `while [ "$i" -lt ${rounds} ]; do`,
    "  clupilot_sig",
    `  if [ "$sig" != "$seen" ]; then echo '${CHANGED}'; exit 0; fi`,
    "  printf .",
    "  nap",
    "  i=$((i + 1))",
    "done",
    `echo '${UNCHANGED}'`,
  ].join("\n");
}

/** What the watch loop said; anything else means it did not run as written. */
export function watchSawChange(stdout: string): boolean {
  if (stdout.includes(CHANGED)) return true;
  if (stdout.includes(UNCHANGED)) return false;
  throw new Error(`the watch loop ended without saying whether anything changed`);
}
