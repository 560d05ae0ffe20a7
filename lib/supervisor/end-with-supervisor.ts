/**
 * Loaded first in every process npm start's supervisor runs (`node --import tsx --import
 * ./lib/supervisor/end-with-supervisor.ts …`): when the supervisor itself is gone — killed with
 * SIGKILL, or its terminal closed under it — the child stops the way a Ctrl-C would have stopped
 * it, instead of running on unsupervised (a second `npm start` would then meet a worker nobody
 * restarts and a port still taken).
 *
 * Each child runs in its own process group (see child-process-service.ts), so the kernel's
 * signal to the supervisor's group never reaches it; being re-parented is the one sign left.
 */
import { SUPERVISOR_PID_ENV } from "./supervisor-pid";

const CHECK_INTERVAL_MS = 1000;

const supervisorPid = Number(process.env[SUPERVISOR_PID_ENV]);
// Processes this one forks inherit its --import (Node passes execArgv on), and Next's dev
// server forks: only the supervisor's own child watches, and the variable goes no further.
delete process.env[SUPERVISOR_PID_ENV];
if (Number.isInteger(supervisorPid) && supervisorPid > 0 && process.ppid === supervisorPid) {
  const timer = setInterval(() => {
    if (process.ppid === supervisorPid) return;
    clearInterval(timer);
    console.error(
      `[pid ${process.pid}] npm start's supervisor (pid ${supervisorPid}) is gone: stopping as on Ctrl-C`,
    );
    process.kill(process.pid, "SIGTERM");
  }, CHECK_INTERVAL_MS);
  // Never the reason a process stays alive.
  timer.unref();
}
