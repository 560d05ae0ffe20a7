import { sh } from "@/lib/ssh";
import { killSessionSnippet, ownedLeaderSnippet } from "../../remote-job/detached-process";
import {
  printSignature,
  takeSignature,
  watchStatusCommand,
  type FollowedFile,
  type WatchedStatus,
} from "../../remote-job/remote-watch";
import { readFirstLine, SHOW_FUNCTION } from "../../remote-job/shell-read";

/**
 * Commands BuildVmTemplate sends; every one is in test/command-catalog.ts and passes `sh -n`.
 * All of them are POSIX sh: a non-root user's commands run through `sudo -n sh -c` (dash on
 * Debian).
 */
export const BUILD_DIR = "/var/lib/clupilot/template-build";
export const DRIVER_NAME = "template-run.sh";

/**
 * What a waiting visit decides on: state, and whether the driver (pid, else lock) lives; the
 * phase is only shown, so a new one reaches the phase line without a visit.
 */
const BUILD_STATUS: WatchedStatus = {
  dir: BUILD_DIR,
  files: ["state"],
  shown: "phase",
  pidFiles: ["pid", "lock"],
};

/** Prints the host's absolute build dir, so uploads can name it. */
export const RESOLVE_BUILD_DIR = `printf '%s\\n' ${BUILD_DIR}`;

const SEPARATOR = "--clupilot--";

/** Exactly the driver's command line as the start command runs it (`$d` = the build dir). */
const DRIVER_ARGV = `bash "$d/${DRIVER_NAME}" "$d/build.env"`;

/**
 * The driver's PID: the pid file, else the lock file (the driver writes `$$` into both; the
 * lock file is never removed, so a deleted pid file does not hide a live driver).
 */
const DRIVER_PID = [
  readFirstLine("pid", '"$d/pid"'),
  `case "$pid" in ''|*[!0-9]*) ${readFirstLine("pid", '"$d/lock"')} ;; esac`,
];

/**
 * `held` while any process holds the driver's lock (the driver, or a member that outlived it:
 * they inherit the lock's descriptor); `unknown` when flock is missing — never read as free.
 */
const LOCK_STATE = `if ! command -v flock >/dev/null 2>&1; then echo unknown; elif [ ! -e "$d/lock" ] || flock -n "$d/lock" true 2>/dev/null; then echo free; else echo held; fi`;

/**
 * Every status file in one round trip, whether the PID is alive AND is our driver (exact
 * command line), and whether the driver's lock is held.
 * Liveness is read BEFORE the state file: a driver that writes `ok` and exits between the two
 * reads must show as (ok, dead) or (running, alive) — never as (running, dead), which the
 * table fails at once.
 */
const STATUS_BODY = [
  // What a waiter compares against (remote-watch.ts), read BEFORE what the visit decides on:
  // a change in between makes the watch return at once, never go unnoticed.
  printSignature(BUILD_STATUS),
  ...DRIVER_PID,
  ownedLeaderSnippet(DRIVER_ARGV),
  SHOW_FUNCTION,
  `show "$d/state"; echo ${SEPARATOR}`,
  `show "$d/phase"; echo ${SEPARATOR}`,
  `show "$d/note"; echo ${SEPARATOR}`,
  `if [ "$leader" = 1 ]; then echo alive; else echo dead; fi`,
  `echo ${SEPARATOR}`,
  LOCK_STATE,
  `echo ${SEPARATOR}`,
  `tail -n 20 "$d/build.log" 2>/dev/null`,
  // The exit status says nothing about the build; only "could not run at all" may fail.
  "true",
];

export const READ_STATUS = [`d=${BUILD_DIR}`, ...STATUS_BODY].join("\n");

/** The status's signature alone: after a start, the first watch's baseline. */
export const BUILD_SIGNATURE = printSignature(BUILD_STATUS);

/**
 * Waits on the host, between visits and outside the worker's slots, until the build's state or
 * driver liveness differs from what the visit that polled read (`baseline`, its status read's
 * signature), for at most about `seconds`: a finished build reaches the console within a round
 * of the loop (remote-watch.ts). Meanwhile it reports each phase other than the one the visit
 * showed (`phase`: the phase file's first line as read) and streams `build.log` on from where
 * the run log's copy ends (`log`), so both stay live without a visit.
 */
export function watchBuildCommand(
  baseline: string,
  seconds: number,
  shown: { phase?: string; log?: FollowedFile } = {},
): string {
  return watchStatusCommand(BUILD_STATUS, baseline, seconds, {
    shownSeen: shown.phase,
    followed: shown.log,
  });
}

export type ParsedStatus = {
  state: "running" | "ok" | "failed" | null;
  phase: string | null;
  note: string | null;
  driverAlive: boolean;
  lockHeld: boolean;
  logTail: string[];
  /** The status's signature, taken before the rest: the baseline of the next watch. */
  signature: string | null;
};

export function parseStatus(stdout: string): ParsedStatus {
  const { signature, rest } = takeSignature(stdout);
  const [state = "", phase = "", note = "", alive = "", lock = "", log = ""] = rest.split(
    `${SEPARATOR}\n`,
  );
  const lockState = lock.trim();
  if (lockState !== "held" && lockState !== "free")
    throw new Error(
      `could not tell whether a template build driver holds its lock on the host (${lockState || "no answer"}); is flock (util-linux) installed?`,
    );
  const trimmedState = state.trim();
  return {
    state:
      trimmedState === "running" || trimmedState === "ok" || trimmedState === "failed"
        ? trimmedState
        : null,
    phase: phase.trim() || null,
    note: note.trim() || null,
    driverAlive: alive.trim() === "alive",
    lockHeld: lockState === "held",
    logTail: log.split("\n").filter((line) => line.length > 0),
    signature,
  };
}

/**
 * Starts the driver detached (`nohup setsid`: it survives the SSH channel closing and leads its
 * own process group), then waits up to 15 s for the driver's own pid file, so the first poll
 * does not take a healthy build for dead; prints the pid. The previous build.log is kept as build.log.previous:
 * each build's log starts at byte 0, and the run log's tail sees a new file. Refused (exit 75,
 * nothing touched) while any process holds the driver's lock: a live build is adopted, never
 * joined by a second driver.
 */
export const START_REFUSED_EXIT = 75;

export function startBuildCommand(buildDir: string): string {
  return [
    sh`cd ${buildDir}`,
    `if [ -e lock ] && ! flock -n lock true; then echo "a template build driver (pid $(cat lock 2>/dev/null)) holds $(pwd)/lock" >&2; exit ${START_REFUSED_EXIT}; fi`,
    "rm -f state pid phase note",
    "if [ -e build.log ]; then mv -f build.log build.log.previous; fi",
    sh`nohup setsid bash ${`${buildDir}/${DRIVER_NAME}`} ${`${buildDir}/build.env`} < /dev/null > /dev/null 2>&1 &`,
    "i=0; while [ ! -s pid ] && [ $i -lt 150 ]; do sleep 0.1; i=$((i + 1)); done",
    "cat pid 2>/dev/null",
    "true",
  ].join("\n");
}

/**
 * Gives up on a build: TERM to every process of the driver's session, KILL after a grace
 * period, each only with evidence it is ours (detached-process.ts: the driver's exact command
 * line, the members' session id and build mark). Prints what it did: no-pid | not-ours |
 * none-left | terminated | killed | survived: <pid>(<cmdline>) …
 */
export function killBuildCommand(graceSeconds = 10): string {
  return [`d=${BUILD_DIR}`, ...DRIVER_PID, killSessionSnippet(DRIVER_ARGV, graceSeconds)].join(
    "\n",
  );
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
