import { sh } from "@/lib/ssh";

/**
 * Commands BuildVmTemplate sends; every one is in lib/ssh/command-catalog.ts and passes `sh -n`.
 * The state dir is resolved on the host (`CLUPILOT_STATE_DIR` is set only in the lab). All of
 * them are POSIX sh: a non-root user's commands run through `sudo -n sh -c` (dash on Debian).
 */
export const BUILD_DIR = '"${CLUPILOT_STATE_DIR:-/var/lib/clupilot}/template-build"';
export const DRIVER_NAME = "template-run.sh";

/** Prints the host's absolute build dir, so uploads can name it. */
export const RESOLVE_BUILD_DIR = `printf '%s\\n' ${BUILD_DIR}`;

const SEPARATOR = "--clupilot--";

/**
 * Sets `ours=1` when `$pid` is a live process whose command line runs THIS build dir's driver.
 * A PID reused by an unrelated process reads as not ours (and is never signalled); so does a
 * zombie, whose cmdline is empty (a killed driver whose parent never reaps it is not alive).
 */
const IS_OUR_DRIVER = [
  "ours=0",
  `case "$pid" in ''|*[!0-9]*) ;; *) if kill -0 "$pid" 2>/dev/null && tr '\\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$d/${DRIVER_NAME}"; then ours=1; fi ;; esac`,
];

/**
 * Every status file in one round trip, and whether the PID is alive AND is our driver.
 * Liveness is read BEFORE the state file: a driver that writes `ok` and exits between the two
 * reads must show as (ok, dead) or (running, alive) — never as (running, dead), which the
 * table fails at once.
 */
const STATUS_BODY = [
  `pid=$(cat "$d/pid" 2>/dev/null)`,
  ...IS_OUR_DRIVER,
  `cat "$d/state" 2>/dev/null; echo ${SEPARATOR}`,
  `cat "$d/phase" 2>/dev/null; echo ${SEPARATOR}`,
  `cat "$d/note" 2>/dev/null; echo ${SEPARATOR}`,
  `if [ "$ours" = 1 ]; then echo alive; else echo dead; fi`,
  `echo ${SEPARATOR}`,
  `tail -n 20 "$d/build.log" 2>/dev/null`,
  // The exit status says nothing about the build; only "could not run at all" may fail.
  "true",
];

export const READ_STATUS = [`d=${BUILD_DIR}`, ...STATUS_BODY].join("\n");

/**
 * The cheap watch (benchmark: state=ok → advance in ≤ 2 s instead of up to one poll interval):
 * waits up to `seconds` on the host while the driver is running and its phase unchanged,
 * reading two small files with the shell's own `read` and `kill -0` (no process besides one
 * `sleep` per half second), then prints what READ_STATUS prints. It returns early on any
 * change, so a finished build or a new phase reaches the console at once.
 */
export function watchStatusCommand(seconds: number): string {
  const rounds = Math.max(0, Math.floor(seconds * 2));
  return [
    `d=${BUILD_DIR}`,
    `p0=; { IFS= read -r p0 < "$d/phase"; } 2>/dev/null`,
    `w=$(cat "$d/pid" 2>/dev/null)`,
    "i=0",
    `while [ $i -lt ${rounds} ]; do`,
    `  s=; { IFS= read -r s < "$d/state"; } 2>/dev/null`,
    `  [ "$s" = running ] || break`,
    `  p=; { IFS= read -r p < "$d/phase"; } 2>/dev/null`,
    `  [ "$p" = "$p0" ] || break`,
    `  kill -0 "$w" 2>/dev/null || break`,
    "  sleep 0.5; i=$((i + 1))",
    "done",
    ...STATUS_BODY,
  ].join("\n");
}

export type ParsedStatus = {
  state: "running" | "ok" | "failed" | null;
  phase: string | null;
  note: string | null;
  driverAlive: boolean;
  logTail: string[];
};

export function parseStatus(stdout: string): ParsedStatus {
  const [state = "", phase = "", note = "", alive = "", log = ""] = stdout.split(`${SEPARATOR}\n`);
  const trimmedState = state.trim();
  return {
    state:
      trimmedState === "running" || trimmedState === "ok" || trimmedState === "failed"
        ? trimmedState
        : null,
    phase: phase.trim() || null,
    note: note.trim() || null,
    driverAlive: alive.trim() === "alive",
    logTail: log.split("\n").filter((line) => line.length > 0),
  };
}

/**
 * Starts the driver detached (`nohup setsid`: it survives the SSH channel closing and leads its
 * own process group), then waits up to 15 s for the driver's own pid file, so the first poll
 * does not take a healthy build for dead. The previous build.log is kept as build.log.previous:
 * each build's log starts at byte 0, and the run log's tail sees a new file.
 */
export function startBuildCommand(buildDir: string): string {
  return [
    sh`cd ${buildDir}`,
    "rm -f state pid phase note",
    "if [ -e build.log ]; then mv -f build.log build.log.previous; fi",
    sh`nohup setsid bash ${`${buildDir}/${DRIVER_NAME}`} ${`${buildDir}/build.env`} < /dev/null > /dev/null 2>&1 &`,
    "i=0; while [ ! -s pid ] && [ $i -lt 150 ]; do sleep 0.1; i=$((i + 1)); done",
    "cat pid 2>/dev/null",
    "true",
  ].join("\n");
}

/**
 * Gives up on a build: TERM to the process group, KILL after a grace period — but only after
 * `/proc/$PID/cmdline` shows the PID is still our driver. "Gone" means no live (non-zombie)
 * member of the group is left: `kill -0 -PGID` also succeeds for zombies, which a container's
 * PID 1 may never reap. Prints what it did: no-pid | not-ours | terminated | killed | survived.
 */
export function killBuildCommand(graceSeconds = 10): string {
  return [
    `d=${BUILD_DIR}`,
    `pid=$(cat "$d/pid" 2>/dev/null)`,
    `case "$pid" in ''|*[!0-9]*) echo no-pid; exit 0 ;; esac`,
    ...IS_OUR_DRIVER,
    `if [ "$ours" != 1 ]; then echo not-ours; exit 0; fi`,
    // Fields after the command name in /proc/N/stat: state ppid pgrp …
    "group_alive() {",
    "  for f in /proc/[0-9]*/stat; do",
    '    line=; { IFS= read -r line < "$f"; } 2>/dev/null || continue',
    "    rest=${line##*) }",
    "    set -- $rest",
    '    if [ "${3:-}" = "$pid" ] && [ "$1" != Z ] && [ "$1" != X ]; then return 0; fi',
    "  done",
    "  return 1",
    "}",
    `kill -TERM -- "-$pid" 2>/dev/null`,
    `i=0; while group_alive && [ $i -lt ${graceSeconds * 10} ]; do sleep 0.1; i=$((i + 1)); done`,
    "if ! group_alive; then echo terminated; exit 0; fi",
    `kill -KILL -- "-$pid" 2>/dev/null`,
    "i=0; while group_alive && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done",
    "if group_alive; then echo survived; else echo killed; fi",
  ].join("\n");
}

/**
 * A non-root SSH user uploads (checksum-verified) into /tmp, then this moves the file into the
 * root-owned build dir, run as root.
 */
export function installUploadCommand(staging: string, target: string): string {
  const dir = target.slice(0, target.lastIndexOf("/")) || "/";
  return sh`mkdir -p -- ${dir} && mv -f -- ${staging} ${target} && chown root:root -- ${target}`;
}

/** After a fail: status files gone, so a Retry is a first visit. The verified image stays. */
export const CLEAR_STATUS = `d=${BUILD_DIR}; rm -f "$d/state" "$d/pid" "$d/phase" "$d/note"`;

/** The per-run values, shell-quoted, for the driver to source. */
export function buildEnvFile(values: {
  vmids: number[];
  imageUrl: string;
  sha512sumsUrl: string;
}): string {
  return [
    sh`TEMPLATE_VMIDS=${values.vmids.join(" ")}`,
    sh`IMAGE_URL=${values.imageUrl}`,
    sh`SHA512SUMS_URL=${values.sha512sumsUrl}`,
    "",
  ].join("\n");
}
