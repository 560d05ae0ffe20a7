import { sh } from "@/lib/ssh";

/**
 * Commands BuildVmTemplate sends; every one is in lib/ssh/command-catalog.ts and passes `sh -n`.
 * The state dir is resolved on the host (`CLUPILOT_STATE_DIR` is set only in the lab).
 */
export const BUILD_DIR = '"${CLUPILOT_STATE_DIR:-/var/lib/clupilot}/template-build"';
export const DRIVER_NAME = "template-run.sh";

/** Prints the host's absolute build dir, so uploads can name it. */
export const RESOLVE_BUILD_DIR = `printf '%s\\n' ${BUILD_DIR}`;

const SEPARATOR = "--clupilot--";

/**
 * Reads every status file in one round trip and says whether the PID is alive AND is our driver:
 * `/proc/$PID/cmdline` must name template-run.sh, so a PID reused by an unrelated process reads
 * as dead (and is never signalled).
 */
export const READ_STATUS = [
  `d=${BUILD_DIR}`,
  `cat "$d/state" 2>/dev/null; echo ${SEPARATOR}`,
  `cat "$d/phase" 2>/dev/null; echo ${SEPARATOR}`,
  `cat "$d/note" 2>/dev/null; echo ${SEPARATOR}`,
  `pid=$(cat "$d/pid" 2>/dev/null)`,
  `case "$pid" in ''|*[!0-9]*) echo dead ;; *) if kill -0 "$pid" 2>/dev/null && tr '\\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q ${DRIVER_NAME}; then echo alive; else echo dead; fi ;; esac`,
  `echo ${SEPARATOR}`,
  `tail -n 20 "$d/build.log" 2>/dev/null`,
].join("; ");

export function parseStatus(stdout: string) {
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
  } as const;
}

/**
 * Starts the driver detached (`nohup setsid`: it survives the SSH channel closing and leads its
 * own process group), then waits up to 15 s for the driver's own pid file, so the first poll
 * does not take a healthy build for dead.
 */
export function startBuildCommand(buildDir: string): string {
  return [
    sh`cd ${buildDir}`,
    "rm -f state pid phase note",
    sh`nohup setsid bash ${`${buildDir}/${DRIVER_NAME}`} ${`${buildDir}/build.env`} < /dev/null > /dev/null 2>&1 &`,
    "i=0; while [ ! -s pid ] && [ $i -lt 150 ]; do sleep 0.1; i=$((i + 1)); done",
    "cat pid 2>/dev/null",
  ].join("\n");
}

/**
 * Gives up on a build: TERM to the process group, KILL after a grace period — but only after
 * `/proc/$PID/cmdline` shows the PID is still our driver. Prints what it did.
 */
export function killBuildCommand(graceSeconds = 10): string {
  return [
    `d=${BUILD_DIR}`,
    `pid=$(cat "$d/pid" 2>/dev/null)`,
    `case "$pid" in ''|*[!0-9]*) echo no-pid; exit 0 ;; esac`,
    `if ! tr '\\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q ${DRIVER_NAME}; then echo not-ours; exit 0; fi`,
    `kill -TERM -- "-$pid" 2>/dev/null`,
    `i=0; while kill -0 -- "-$pid" 2>/dev/null && [ $i -lt ${graceSeconds * 10} ]; do sleep 0.1; i=$((i + 1)); done`,
    `if kill -0 -- "-$pid" 2>/dev/null; then kill -KILL -- "-$pid" 2>/dev/null; echo killed; else echo terminated; fi`,
  ].join("; ");
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
