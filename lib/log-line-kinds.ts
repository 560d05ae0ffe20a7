/**
 * What a line of the run log is (also the database's `log_line_kind` enum):
 * - command: the header of a command a step sent (`▶ Step time $ command`, secrets masked)
 * - output:  the command's stdout/stderr
 * - result:  the command's exit code and duration
 * - note:    a step's own words (`ctx.log`)
 * - file:    a file tailed from the host (BuildVmTemplate's build.log)
 * - marker:  the log speaking about itself (cap reached, tailed file recreated)
 * - run:     the engine: a visit's error, the run's end (failed, aborted, succeeded)
 */
export const LOG_LINE_KINDS = [
  "command",
  "output",
  "result",
  "note",
  "file",
  "marker",
  "run",
] as const;
