/**
 * The shell side of "a detached process this console started on the host", shared by the
 * remote jobs (remote-job.ts) and the template build (build-vm-template/): whether a PID is
 * still ours, and stopping everything it started — each process only with evidence it is ours.
 *
 * Evidence, never a guess:
 * - the leader (the `nohup setsid` process, whose PID is its session id): alive, not a zombie,
 *   and `/proc/<pid>/cmdline` EXACTLY the words it was started with (a reused PID runs
 *   something else; a substring match would also accept `vi <dir>/run.sh`);
 * - a member: its session id is the leader's PID, and either the leader is ours (Linux does
 *   not hand out a PID while a session of that number lives) or — the leader gone — its
 *   environment carries `CLUPILOT_DETACHED=<dir>`, which the leader exports to everything it
 *   starts.
 *
 * All snippets are POSIX sh (a non-root user's commands run through `sudo -n sh -c`, dash on
 * Debian) and expect `$d` (the job's directory, as the leader exported it) and `$pid` set.
 */

/** The variable the leader exports to every process it starts; its value is the job's dir. */
export const DETACHED_MARK = "CLUPILOT_DETACHED";

/** The line a leader script runs first, so every member it starts carries the evidence. */
export function exportMark(dirExpression: string): string {
  return `export ${DETACHED_MARK}=${dirExpression}`;
}

/** Shell functions: `live P` (a non-zombie process), `ours_leader` (sets leader=1). */
function leaderFunctions(argvWords: string): string[] {
  return [
    "live() {",
    '  l=; { IFS= read -r l < "/proc/$1/stat"; } 2>/dev/null || return 1',
    "  r=${l##*) }",
    '  case "$r" in Z*|X*) return 1 ;; esac',
    "  return 0",
    "}",
    "leader=0",
    `case "$pid" in ''|*[!0-9]*) ;; *)`,
    `  if live "$pid" && [ "$(tr '\\0' '\\n' < "/proc/$pid/cmdline" 2>/dev/null)" = "$(printf '%s\\n' ${argvWords})" ]; then leader=1; fi ;;`,
    "esac",
  ];
}

/**
 * Sets `leader=1` when `$pid` is a live process whose command line is exactly `argvWords`
 * (shell words, e.g. `bash "$d/run.sh" "$d"`), else `leader=0`.
 */
export function ownedLeaderSnippet(argvWords: string): string {
  return leaderFunctions(argvWords).join("\n");
}

/**
 * Stops the leader's whole session: TERM to every member proven ours, KILL after the grace
 * period, then reports what is left. Prints one last line: `no-pid` (nothing recorded),
 * `not-ours` (the PID is alive and runs something else: nothing is signalled), `none-left`,
 * `terminated`, `killed` (after it ignored TERM), or `survived: <pid>(<cmdline>) …`.
 */
export function killSessionSnippet(argvWords: string, graceSeconds: number): string {
  return [
    `case "$pid" in ''|*[!0-9]*) echo no-pid; exit 0 ;; esac`,
    ...leaderFunctions(argvWords),
    `if [ "$leader" != 1 ] && live "$pid"; then echo not-ours; exit 0; fi`,
    // Fields after the command name in /proc/N/stat: state ppid pgrp session …
    "members() {",
    "  for f in /proc/[0-9]*/stat; do",
    '    line=; { IFS= read -r line < "$f"; } 2>/dev/null || continue',
    "    rest=${line##*) }",
    "    set -- $rest",
    '    [ "${4:-}" = "$pid" ] || continue',
    '    case "$1" in Z|X) continue ;; esac',
    "    p=${f#/proc/}; p=${p%/stat}",
    `    if [ "$leader" = 1 ] || tr '\\0' '\\n' < "/proc/$p/environ" 2>/dev/null | grep -qxF "${DETACHED_MARK}=$d"; then echo "$p"; fi`,
    "  done",
    "}",
    // Gone and, where the host reaps them promptly, reaped: bounded, since a container's PID 1
    // may never reap a zombie (which is no live process either way).
    `reaped() { i=0; while kill -0 -- "-$pid" 2>/dev/null && [ $i -lt 20 ]; do sleep 0.1; i=$((i + 1)); done; }`,
    "m=$(members)",
    `if [ -z "$m" ]; then echo none-left; exit 0; fi`,
    "kill -TERM $m 2>/dev/null",
    `i=0; while [ -n "$(members)" ] && [ $i -lt ${Math.round(graceSeconds * 10)} ]; do sleep 0.1; i=$((i + 1)); done`,
    `if [ -z "$(members)" ]; then reaped; echo terminated; exit 0; fi`,
    "kill -KILL $(members) 2>/dev/null",
    `i=0; while [ -n "$(members)" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done`,
    "m=$(members)",
    `if [ -z "$m" ]; then reaped; echo killed; exit 0; fi`,
    `printf 'survived:'; for p in $m; do printf ' %s(%s)' "$p" "$(tr '\\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | cut -c1-80)"; done; echo`,
  ].join("\n");
}

/** What a kill snippet's last line says, for the run log. */
export function describeKill(said: string): string {
  if (said === "terminated") return "terminated";
  if (said === "killed") return "killed after it ignored TERM";
  if (said === "not-ours") return "already gone (its PID belongs to another process now)";
  if (said.startsWith("survived:"))
    return `NOT fully stopped — still running after KILL: ${said.slice("survived:".length).trim()}`;
  return "already gone";
}
