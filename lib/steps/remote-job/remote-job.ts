import {
  advance,
  fail,
  poll,
  pollUntil,
  type Outcome,
  type StepContext,
} from "@/lib/pipeline/step";
import type { SourcePosition } from "@/lib/logs/append";
import { readSourcePosition } from "@/lib/logs/append";
import { foldCarriageReturns } from "@/lib/logs/text";
import { sh } from "@/lib/ssh";
import { copyHostFile, type HostFileCopy } from "./host-file-log";
import type { RemoteHost } from "./remote-host";
import { readFirstLine } from "./shell-read";
import { alreadyInPlace } from "../../pipeline/already-in-place";
import {
  describeKill,
  exportMark,
  killSessionSnippet,
  ownedLeaderSnippet,
} from "./detached-process";
import {
  printSignature,
  takeSignature,
  watchStatusCommand,
  type WatchedStatus,
} from "./remote-watch";

/**
 * Detached remote jobs: long work on the host (apt installing a kernel or Proxmox VE) that must
 * not hold a visit, an SSH channel or a worker for minutes. The job runs under `nohup setsid`
 * (it survives the channel closing and leads its own process group), writes its own status
 * files, and each visit reads them in one round trip — the same decision shape as
 * BuildVmTemplate's tables (docs/build-vm-template.md; this one: docs/pipeline.md, "Detached
 * remote jobs"). What the job prints goes into the run log as it comes: a visit copies its `log`
 * by byte offset, and the waiter streams it between visits, with its last line on the phase
 * line (remote-watch.ts).
 *
 * Files in `/var/lib/clupilot/jobs/<name>/` on the host:
 *
 * | file     | content                                                    |
 * |----------|------------------------------------------------------------|
 * | `state`  | `running`, `ok` or `failed`                                |
 * | `pid`    | PID of the job's shell, written by itself from `$$`        |
 * | `exit`   | the body's exit status                                     |
 * | `log`    | everything the body printed; its last line is the phase    |
 * | `body.sh`, `run.sh` | the body, and the wrapper that writes the files |
 *
 * Whether THIS run started (or adopted) the job is what the job's record in the run context
 * says; the files outlive the run that wrote them.
 */

export type JobState = "running" | "ok" | "failed";

export type JobStatus = {
  /** `state` file; null when there is none. */
  state: JobState | null;
  /** The pid file names a live process whose command line is this job's wrapper. */
  alive: boolean;
  exitCode: number | null;
  /** The status's signature, read before the rest: the baseline of the next watch. */
  signature: string | null;
};

/** What the run context keeps about a job this run started or adopted. */
export type JobRecord = {
  startedAt: string;
  /** The job's own deadline (ISO), under the step's maxDuration. */
  deadlineAt: string;
  /** The phase line last shown: the job's last output line. */
  phase: string | null;
};

export type JobDecision =
  | { kind: "adopt" }
  | { kind: "start" }
  | { kind: "poll" }
  | { kind: "give-up" }
  | { kind: "ended-ok" }
  | { kind: "fail"; reason: string };

const NAME = /^[a-z0-9][a-z0-9-]*$/;
const HEADER = "clupilot-job";
const SEPARATOR = "--clupilot-job-status--";
const ENDED_AT_START = "clupilot-job: ended-at-start";

/** The job's directory on the host, as a shell word (the name is checked: no quoting needed). */
export function jobDir(name: string): string {
  if (!NAME.test(name)) throw new Error(`remote job name must match ${NAME}, got "${name}"`);
  return `/var/lib/clupilot/jobs/${name}`;
}

/**
 * What a waiting visit decides on: the state file and whether the job's shell lives (`exit`
 * is written just before the final state: watching it too would wake a visit between the two).
 */
function watchedJob(name: string): WatchedStatus {
  return { dir: jobDir(name), files: ["state"], pidFiles: ["pid"] };
}

/** The job's output on the host: what the run log copies and the phase line shows. */
export function jobLogPath(name: string): string {
  return `${jobDir(name)}/log`;
}

/**
 * Waits on the host, between visits, until the job's state, exit or liveness differ from what
 * the visit that polled read (`baseline`), for at most about `seconds` (remote-watch.ts); streams
 * the job's log on from `log` (where the run log's copy ends) meanwhile.
 */
export function watchJobCommand(
  name: string,
  baseline: string,
  seconds: number,
  log?: Pick<SourcePosition, "offset" | "inode">,
): string {
  return watchStatusCommand(watchedJob(name), baseline, seconds, {
    followed:
      log === undefined
        ? undefined
        : { path: jobLogPath(name), offset: log.offset, identity: log.inode },
  });
}

/** Exactly what `/proc/$PID/cmdline` of the job's shell holds, as shell words (`$d` = its dir). */
const WRAPPER_ARGV = 'bash "$d/run.sh" "$d"';

/**
 * The wrapper the job runs as. It writes its own PID (`$$`: with `setsid` in between, `$!` on
 * the starting side can name a process that is already gone), runs the body with stdin closed
 * (a prompt must fail, not wait forever), and records the exit status and the final state
 * through a rename, so a reader never sees a half-written file.
 */
export const JOB_WRAPPER = [
  "#!/bin/bash",
  'd="$1"',
  // Every process the body starts carries the job's dir: the evidence a kill needs once the
  // wrapper itself is gone (detached-process.ts).
  exportMark('"$d"'),
  'printf \'%s\\n\' "$$" > "$d/pid.tmp" && mv -f "$d/pid.tmp" "$d/pid"',
  'printf \'running\\n\' > "$d/state.tmp" && mv -f "$d/state.tmp" "$d/state"',
  'bash "$d/body.sh" >> "$d/log" 2>&1 < /dev/null',
  "rc=$?",
  'printf \'%s\\n\' "$rc" > "$d/exit"',
  'if [ "$rc" -eq 0 ]; then s=ok; else s=failed; fi',
  'printf \'%s\\n\' "$s" > "$d/state.tmp" && mv -f "$d/state.tmp" "$d/state"',
  "",
].join("\n");

/**
 * Starts the job detached. The body arrives on stdin. Waits up to 15 s for the job's own pid
 * and state files, so the first poll does not take a healthy job for dead; prints the PID, then the
 * status's signature (the first watch's baseline). Fails when no pid file appeared.
 */
export function startJobCommand(name: string): string {
  return [
    `d=${jobDir(name)}`,
    'mkdir -p "$d" || exit 1',
    'rm -f "$d/state" "$d/pid" "$d/exit" "$d/log"',
    'cat > "$d/body.sh" || exit 1',
    sh`printf '%s' ${JOB_WRAPPER} > "$d/run.sh" || exit 1`,
    'nohup setsid bash "$d/run.sh" "$d" < /dev/null > /dev/null 2>&1 &',
    // The wrapper writes its pid, then its state: a baseline taken between the two would lack
    // "running" and read as a job already over.
    'i=0; while { [ ! -s "$d/pid" ] || [ ! -s "$d/state" ]; } && [ $i -lt 150 ]; do sleep 0.1; i=$((i + 1)); done',
    'cat "$d/pid" 2>/dev/null; rc=$?',
    printSignature(watchedJob(name)),
    // A short job may be over already: its end is then in the baseline, and a watch on it
    // would wait for a change that never comes (the whole poll interval).
    `case "$key" in *"state=running"*" alive"*) ;; *) echo ${ENDED_AT_START} ;; esac`,
    "exit $rc",
  ].join("\n");
}

/** What the start command printed when the job had ended before it took the baseline. */
export function endedAtStart(stdout: string): boolean {
  return stdout.split("\n").includes(ENDED_AT_START);
}

/**
 * One round trip: the state files, and whether the PID is alive AND is our wrapper (a PID reused
 * by an unrelated process reads as dead and is never signalled). The log is copied apart from it,
 * by byte offset (`copyHostFile`).
 */
export function readJobCommand(name: string): string {
  return [
    // The next watch's baseline first: a change after it makes the watch return at once.
    printSignature(watchedJob(name)),
    `d=${jobDir(name)}`,
    readFirstLine("pid", '"$d/pid"'),
    ownedLeaderSnippet(WRAPPER_ARGV),
    'if [ "$leader" = 1 ]; then alive=yes; else alive=no; fi',
    // Liveness first, the state after: a job that writes its result and exits between the two
    // reads must read as finished, not as "running but dead".
    readFirstLine("state", '"$d/state"'),
    readFirstLine("ex", '"$d/exit"'),
    `echo "${HEADER} state=\${state:-none} alive=$alive exit=\${ex:-none}"`,
  ].join("\n");
}

export function parseJobStatus(stdout: string): JobStatus {
  const { signature, rest } = takeSignature(stdout);
  const lines = rest.split("\n");
  const headerIndex = lines.findIndex((line) => line.startsWith(`${HEADER} `));
  if (headerIndex < 0) throw new Error("the job status read printed no status line");
  const fields = new Map<string, string>();
  for (const word of lines[headerIndex]!.split(" ").slice(1)) {
    const eq = word.indexOf("=");
    if (eq > 0) fields.set(word.slice(0, eq), word.slice(eq + 1));
  }
  const state = fields.get("state");
  const exit = fields.get("exit") ?? "none";
  return {
    state: state === "running" || state === "ok" || state === "failed" ? state : null,
    alive: fields.get("alive") === "yes",
    exitCode: /^\d+$/.test(exit) ? Number(exit) : null,
    signature,
  };
}

/**
 * Gives up on a job: TERM to every process of its session (apt's children with it), KILL after
 * a grace period, each only with evidence it is ours (detached-process.ts). Prints what it did
 * (`no-pid`, `not-ours`, `none-left`, `terminated`, `killed`, `survived: …`).
 */
export function killJobCommand(name: string, graceSeconds = 10): string {
  return [
    `d=${jobDir(name)}`,
    'pid=$(cat "$d/pid" 2>/dev/null)',
    killSessionSnippet(WRAPPER_ARGV, graceSeconds),
  ].join("\n");
}

/** After a fail: the status files go, so a Retry is a first visit. The log stays for reading. */
export function clearJobCommand(name: string): string {
  return `d=${jobDir(name)}; rm -f "$d/state" "$d/pid" "$d/exit"`;
}

/** No record in the run context: whatever status exists was left by an earlier run. */
export function decideWithoutRecord(status: JobStatus): JobDecision {
  // running | alive → adopt it: it does the same work; never start a second apt beside it.
  if (status.state === "running" && status.alive) return { kind: "adopt" };
  // anything else → start. An `ok` from an earlier run answers no question this run asked.
  return { kind: "start" };
}

/** Record in the run context: the status files are this run's. */
export function decideWithRecord(
  status: JobStatus,
  record: JobRecord,
  now: Date,
  what: string,
): JobDecision {
  switch (status.state) {
    // none → fail: the start did not take (never an endless restart loop).
    case null:
      return { kind: "fail", reason: `${what} did not start on the host (no status written)` };
    // running | alive → poll, until the job's own deadline; running | dead → fail at once.
    case "running":
      if (!status.alive)
        return {
          kind: "fail",
          reason: `${what} died without reporting a result${record.phase ? ` (last output: ${record.phase})` : ""}`,
        };
      return now.getTime() > Date.parse(record.deadlineAt) ? { kind: "give-up" } : { kind: "poll" };
    // ok → the caller checks the goal: the job saying done is not proof.
    case "ok":
      return { kind: "ended-ok" };
    // failed → fail with the exit status; the caller adds the last log lines.
    case "failed":
      return {
        kind: "fail",
        reason: `${what} failed (exit ${status.exitCode ?? "unknown"})`,
      };
  }
}

/** The phase line: the job's last meaningful output line (as a terminal shows it), short. */
export function phaseFromLines(
  lines: readonly (string | null)[],
  previous: string | null,
): string | null {
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = foldCarriageReturns(lines[i] ?? "")
      .replace(/\s+/g, " ")
      .trim();
    if (line) return line.length > 120 ? `${line.slice(0, 119)}…` : line;
  }
  return previous;
}

export type GoalCheck = { holds: true; detail: string } | { holds: false; missing: string };

/** A long step's work, described for {@link visitRemoteJob}. */
export type RemoteJob<Facts, S extends RemoteHost = RemoteHost> = {
  /** `jobs/<name>` on the host, and the run-context key. */
  name: string;
  /** The step whose run log the job's output is filed under. */
  step: string;
  /** For reasons: "installing proxmox-default-kernel". */
  what: string;
  deadlineSeconds: number;
  /** Reads the goal's facts; runs in the same round trip, after the status read. */
  probe: string;
  parse(stdout: string): Facts;
  goal(facts: Facts): GoalCheck;
  /** The job's bash body, or a refusal (the step fails) when starting would do harm. */
  body(facts: Facts): { body: string } | { refuse: string };
  /**
   * Work the job needs done first, in the visit (writing its inputs): runs only when no job is
   * adopted and the goal does not hold, so nothing is rewritten under a job still running.
   * An outcome ends the visit there (a refusal); null goes on to the start.
   */
  prepare?(ctx: StepContext<S>, facts: Facts): Promise<Outcome | null>;
};

export function contextKey(name: string): string {
  return `remoteJob:${name}`;
}

const STATUS_MARK = `echo ${SEPARATOR}`;

/**
 * One visit of a step whose work is a remote job. Order: for a job this run started, its log
 * copied first (the phase line it shows is never older than the log); then job status and goal
 * facts in one round trip; a job this run started is judged by its status first (a half-done
 * apt can make the goal look reached); without a record, a live job is adopted before the goal
 * is trusted, then the goal, then the job's `prepare`, then a start.
 */
export async function visitRemoteJob<Facts, S extends RemoteHost>(
  ctx: StepContext<S>,
  job: RemoteJob<Facts, S>,
  now: () => Date = () => new Date(),
): Promise<Outcome> {
  const key = contextKey(job.name);
  const record = ctx.context.get<JobRecord>(key) ?? null;
  const log = { step: job.step, path: jobLogPath(job.name) };
  // Only this run's job's output: an earlier job's log left on the host is not this run's story.
  const copied = record === null ? null : await copyHostFile(ctx, log);
  // Status first, goal facts after it: a job that ended before the status read has also
  // ended before the probe, so "ok" is never judged on facts from before its last action.
  const result = await ctx.services.exec(
    `${readJobCommand(job.name)}\n${STATUS_MARK}\n${job.probe}`,
    {
      timeoutMs: 60_000,
      signal: ctx.signal,
    },
  );
  const cut = result.stdout.lastIndexOf(`\n${SEPARATOR}\n`);
  if (cut < 0) {
    throw new Error(
      `reading the state of ${job.what} failed (exit ${result.code}): ${result.stderr.trim()}`,
    );
  }
  const status = parseJobStatus(result.stdout.slice(0, cut + 1));
  const facts = job.parse(result.stdout.slice(cut + SEPARATOR.length + 2));
  const pollSeconds = ctx.services.config.pollSeconds;
  /**
   * Polls, with the worker watching the job's status meanwhile (docs/pipeline.md, "Waiting") and
   * streaming its log on from where the run log's copy ends, its last line on the phase line.
   */
  const pollWatching = async (
    phase: string,
    from: HostFileCopy | null,
    baseline = status.signature,
  ): Promise<Outcome> => {
    if (baseline === null) return poll(pollSeconds, phase);
    const position =
      from?.position ?? (await readSourcePosition(ctx.services.db, ctx.runId, log.path));
    return pollUntil(
      ctx.services.watchCommand(
        job.what,
        watchJobCommand(job.name, baseline, pollSeconds, position),
        pollSeconds + 30,
        {
          log: { step: job.step, from: position },
          phaseOfLine: (line) => phaseFromLines([line], null),
        },
      ),
      pollSeconds,
      phase,
    );
  };
  /** The rest of the job's output, its unterminated last line too: the job is over. */
  const copyTheRest = () => copyHostFile(ctx, { ...log, finish: true });

  if (record !== null) {
    // Nothing new since the waiter streamed it: the phase line it left is the job's last line —
    // unless it is still the start's own words, which are no output of the job.
    const streamed = ctx.phase === job.what ? null : ctx.phase;
    const phase = phaseFromLines([copied?.lastLine ?? null], null) ?? streamed ?? record.phase;
    const decision = decideWithRecord(status, record, now(), job.what);
    switch (decision.kind) {
      case "poll":
        ctx.context.set(key, { ...record, phase });
        return pollWatching(phase ?? job.what, copied);
      case "give-up": {
        const kill = await killJob(ctx, job.name);
        await copyTheRest();
        ctx.context.delete(key);
        const waited = Math.round((now().getTime() - Date.parse(record.startedAt)) / 1000);
        return fail(
          `gave up on ${job.what} after ${waited} s (its deadline is ${job.deadlineSeconds} s); ` +
            `last output: ${phase ?? "none"}; the job's process group was ${kill}. Check the host (network, apt mirrors) and Retry`,
        );
      }
      case "ended-ok": {
        await copyTheRest();
        ctx.context.delete(key);
        const goal = job.goal(facts);
        if (goal.holds) return advance(goal.detail);
        await clearJob(ctx, job.name);
        return fail(`${job.what} reported success, but ${goal.missing}`);
      }
      case "fail": {
        await copyTheRest();
        ctx.context.delete(key);
        const tail = await lastLogLines(ctx, job.name);
        await clearJob(ctx, job.name);
        return fail(
          `${decision.reason}${tail ? `: ${tail}` : ""} — fix what the output names on the host (a running apt, the network, the mirrors), then Retry`,
        );
      }
      case "adopt":
      case "start":
        throw new Error(`unexpected decision ${decision.kind} for a job of this run`);
    }
  }

  const startedAt = now();
  const newRecord = (phase: string | null): JobRecord => ({
    startedAt: startedAt.toISOString(),
    deadlineAt: new Date(startedAt.getTime() + job.deadlineSeconds * 1000).toISOString(),
    phase,
  });
  if (decideWithoutRecord(status).kind === "adopt") {
    ctx.log(`adopting ${job.what}, still running on the host from an earlier run`);
    // Its output so far is the work this run now follows.
    const sofar = await copyHostFile(ctx, log);
    const phase = phaseFromLines([sofar?.lastLine ?? null], null);
    ctx.context.set(key, newRecord(phase));
    return pollWatching(phase ?? job.what, sofar);
  }
  const goal = job.goal(facts);
  if (goal.holds) return alreadyInPlace(ctx, goal.detail);
  const prepared = (await job.prepare?.(ctx, facts)) ?? null;
  if (prepared !== null) return prepared;
  const plan = job.body(facts);
  if ("refuse" in plan) return fail(plan.refuse);
  const started = await ctx.services.exec(startJobCommand(job.name), {
    stdin: plan.body,
    timeoutMs: 60_000,
    signal: ctx.signal,
  });
  if (started.code !== 0) {
    throw new Error(`starting ${job.what} failed (exit ${started.code}): ${started.stderr.trim()}`);
  }
  const { signature, rest } = takeSignature(started.stdout);
  const pid = rest.split("\n")[0]!.trim();
  ctx.log(`started ${job.what} as a detached job (PID ${pid || "unknown"})`);
  ctx.context.set(key, newRecord(null));
  // Ended already: the next visit reads its result now.
  if (endedAtStart(rest)) return poll(0, job.what);
  // A new log (the start removed the old one): the watch streams it from its first byte.
  return pollWatching(job.what, null, signature);
}

/** Operator abort: kill the job's process group (after the cmdline check), forget it. */
export async function abortRemoteJob(ctx: StepContext<RemoteHost>, name: string): Promise<string> {
  const what = await killJob(ctx, name);
  await clearJob(ctx, name);
  ctx.context.delete(contextKey(name));
  return what;
}

async function killJob(ctx: StepContext<RemoteHost>, name: string): Promise<string> {
  const result = await ctx.services.exec(killJobCommand(name), { timeoutMs: 30_000 });
  return describeKill(result.stdout.trim().split("\n").pop() ?? "");
}

async function clearJob(ctx: StepContext<RemoteHost>, name: string): Promise<void> {
  await ctx.services.exec(clearJobCommand(name), { timeoutMs: 30_000 });
}

async function lastLogLines(ctx: StepContext<RemoteHost>, name: string): Promise<string> {
  const result = await ctx.services.exec(`tail -n 5 ${jobDir(name)}/log 2>/dev/null`, {
    timeoutMs: 30_000,
  });
  return result.stdout
    .split("\n")
    .map((line) => line.trim())
    .filter(Boolean)
    .join(" ⏎ ");
}
