import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

import { labDir } from "./lab-state";

/**
 * systemd's transient timers as `systemd-run --on-active=…` makes them, for the lab host: a
 * timer waits in a detached process of the host (so it dies with the host's processes on a
 * reboot or lab stop, as a transient unit does), then runs its command as `<unit>.service`;
 * `systemctl stop <unit>.timer` cancels it. Timers count real seconds, as systemd's do: the
 * lab's time scale speeds up simulated work, never a deadline the console races against.
 *
 * State in `.lab/transient/`: `<unit>.json` while the timer waits, `<unit>.running.json` while
 * its service runs, `<unit>.pid` (the waiting process, leader of its own group) and
 * `<unit>.journal` (what the service printed, with start and end lines).
 */

export type TransientTimer = {
  /** Unit name without suffix: the timer is `<unit>.timer`, its service `<unit>.service`. */
  unit: string;
  description: string;
  onActiveSec: number;
  /** Epoch milliseconds. */
  setAt: number;
  firesAt: number;
  argv: string[];
};

export type TransientState = "waiting" | "running" | null;

/** The marker in the waiting process's command line; stop proves ownership with it. */
const RUNNER_NAME = "clupilot-lab-timer";

const RUNNER = [
  'u="$1"; dir="$2"; delay="$3"; shift 3',
  'sleep "$delay"',
  // Whoever renames the waiting file first wins: the timer firing or `systemctl stop`.
  'mv "$dir/$u.json" "$dir/$u.running.json" 2>/dev/null || exit 0',
  "{",
  '  printf \'%s Started %s.service.\\n\' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$u"',
  '  "$@"; rc=$?',
  '  printf \'%s %s.service: exited, status=%s\\n\' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$u" "$rc"',
  '} >> "$dir/$u.journal" 2>&1 < /dev/null',
  'rm -f "$dir/$u.running.json" "$dir/$u.pid"',
].join("\n");

export function transientDir(root: string): string {
  return path.join(labDir(root), "transient");
}

const file = (root: string, unit: string, suffix: string) =>
  path.join(transientDir(root), `${unit}${suffix}`);

function readTimer(root: string, unit: string, suffix: string): TransientTimer | null {
  try {
    return JSON.parse(fs.readFileSync(file(root, unit, suffix), "utf8")) as TransientTimer;
  } catch {
    return null;
  }
}

/** The unit's waiting process, if it is alive and is this unit's runner (pids are reused). */
function runnerPid(root: string, unit: string): number | null {
  let pid: number;
  try {
    pid = Number(fs.readFileSync(file(root, unit, ".pid"), "utf8").trim());
  } catch {
    return null;
  }
  if (!Number.isInteger(pid) || pid <= 0) return null;
  try {
    const argv = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    return argv.includes(RUNNER_NAME) && argv.includes(unit) && argv.includes(transientDir(root))
      ? pid
      : null;
  } catch {
    return null;
  }
}

/**
 * `waiting` (timer active), `running` (its service active), or null (no such unit). Files whose
 * process is gone (the host rebooted, the lab stopped) are a unit systemd no longer has.
 */
export function transientState(root: string, unit: string): TransientState {
  const waiting = fs.existsSync(file(root, unit, ".json"));
  const running = fs.existsSync(file(root, unit, ".running.json"));
  if (!waiting && !running) return null;
  if (runnerPid(root, unit) === null) {
    for (const suffix of [".json", ".running.json", ".pid"])
      fs.rmSync(file(root, unit, suffix), { force: true });
    return null;
  }
  return waiting ? "waiting" : "running";
}

/** Timers still waiting, soonest first. */
export function waitingTimers(root: string): TransientTimer[] {
  let names: string[];
  try {
    names = fs.readdirSync(transientDir(root));
  } catch {
    return [];
  }
  return names
    .filter((name) => name.endsWith(".json") && !name.endsWith(".running.json"))
    .map((name) => name.slice(0, -".json".length))
    .filter((unit) => transientState(root, unit) === "waiting")
    .map((unit) => readTimer(root, unit, ".json"))
    .filter((timer): timer is TransientTimer => timer !== null)
    .sort((a, b) => a.firesAt - b.firesAt);
}

export function timerOf(root: string, unit: string): TransientTimer | null {
  return transientState(root, unit) === "waiting" ? readTimer(root, unit, ".json") : null;
}

/** Starts the timer's waiting process; the caller has checked that no such unit exists. */
export function startTimer(root: string, timer: TransientTimer, env: NodeJS.ProcessEnv): void {
  const dir = transientDir(root);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(file(root, timer.unit, ".json.tmp"), `${JSON.stringify(timer, null, 2)}\n`);
  fs.renameSync(file(root, timer.unit, ".json.tmp"), file(root, timer.unit, ".json"));
  const child = spawn(
    "/bin/bash",
    ["-c", RUNNER, RUNNER_NAME, timer.unit, dir, String(timer.onActiveSec), ...timer.argv],
    { cwd: root, env, detached: true, stdio: "ignore" },
  );
  if (child.pid === undefined) {
    fs.rmSync(file(root, timer.unit, ".json"), { force: true });
    throw new Error("could not start the timer's process");
  }
  fs.writeFileSync(file(root, timer.unit, ".pid"), `${child.pid}\n`);
  child.unref();
}

/**
 * `systemctl stop`: a waiting timer is cancelled (its command never runs); a running service is
 * killed. Returns false when the unit is not loaded.
 */
export function stopUnit(root: string, unit: string, kind: "timer" | "service"): boolean {
  const state = transientState(root, unit);
  if (kind === "timer" && state !== "waiting") return false;
  if (kind === "service" && state !== "running") return false;
  const from = kind === "timer" ? ".json" : ".running.json";
  const stopped = file(root, unit, `.stopped-${process.pid}`);
  try {
    fs.renameSync(file(root, unit, from), stopped);
  } catch {
    // The timer fired (or the service ended) this very moment: what is loaded now decides.
    return kind === "timer" ? false : stopUnit(root, unit, kind);
  }
  const pid = runnerPid(root, unit);
  if (pid !== null) {
    try {
      process.kill(-pid, "SIGTERM");
    } catch {
      // already gone
    }
  }
  fs.rmSync(stopped, { force: true });
  fs.rmSync(file(root, unit, ".pid"), { force: true });
  return true;
}

/** `systemd-run`'s time span: `90`, `90s`, `2min`, `1m 30s`, `500ms`, `1h`. Seconds, or null. */
export function parseTimeSpan(text: string): number | null {
  const units: Record<string, number> = {
    us: 1e-6,
    usec: 1e-6,
    ms: 1e-3,
    msec: 1e-3,
    "": 1,
    s: 1,
    sec: 1,
    second: 1,
    seconds: 1,
    m: 60,
    min: 60,
    minute: 60,
    minutes: 60,
    h: 3600,
    hr: 3600,
    hour: 3600,
    hours: 3600,
    d: 86400,
    day: 86400,
    days: 86400,
  };
  const parts = [...text.trim().matchAll(/(\d+(?:\.\d+)?)\s*([a-z]*)\s*/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join("") !== text.trim()) return null;
  let total = 0;
  for (const [, value, unit] of parts) {
    const factor = units[unit ?? ""];
    if (factor === undefined) return null;
    total += Number(value) * factor;
  }
  return total;
}
