/**
 * The lines of the console's output (npm start's and every child's, on two pipes) the soak acts
 * on, in the order they arrived:
 *
 * - `started`: the supervisor started a process — `[clupilot] worker 2 started again (pid 4242)`
 *   (lib/supervisor/supervisor.ts; the database's line has no pid);
 * - `ready`: a worker can tick — `[worker] ready (pid 4242)` (worker/main.ts);
 * - `restart`: the supervisor saw one end — `[clupilot] worker 2 ended (killed by SIGKILL) after
 *   3 min; restarting it in 1 s …`.
 *
 * Each pipe is split into lines on its own: a chunk of one ending mid-line must not be glued to
 * the next chunk of the other. A line is looked for anywhere in a line, not only at its start:
 * every child writes to the same pipe, and a write longer than the pipe's atomic size (4 KiB) can
 * be split by another process's short line.
 */
export type ConsoleLine =
  | { kind: "started"; service: string; pid: number | null }
  | { kind: "ready"; pid: number }
  | { kind: "restart"; service: string; ending: string };

const SERVICE = String.raw`(worker(?: \d+)?|web server|database)`;
const STARTED = new RegExp(
  String.raw`\[clupilot\] ${SERVICE} started(?: again)?(?: \(pid (\d+)\))?$`,
);
const READY = /\[worker\] ready \(pid (\d+)\)/;
const RESTART = new RegExp(
  String.raw`\[clupilot\] ${SERVICE} ended \((.*?)\)(?: after [^;]*)?; restarting it in `,
);

export type ConsoleOutput = {
  feed(stream: "stdout" | "stderr", chunk: string): void;
  /** Every line the soak acts on so far, in arrival order. */
  lines(): readonly ConsoleLine[];
};

export function createConsoleOutput(): ConsoleOutput {
  const partial = { stdout: "", stderr: "" };
  const lines: ConsoleLine[] = [];
  const parse = (line: string) => {
    const started = STARTED.exec(line);
    if (started) {
      lines.push({
        kind: "started",
        service: started[1]!,
        pid: started[2] === undefined ? null : Number(started[2]),
      });
    }
    const ready = READY.exec(line);
    if (ready) lines.push({ kind: "ready", pid: Number(ready[1]) });
    const restart = RESTART.exec(line);
    if (restart) lines.push({ kind: "restart", service: restart[1]!, ending: restart[2]! });
  };
  return {
    feed(stream, chunk) {
      const split = (partial[stream] + chunk).split("\n");
      partial[stream] = split.pop()!;
      for (const line of split) parse(line);
    },
    lines: () => lines,
  };
}

/** What became of a killed worker, read from the lines that arrived since the kill. */
export type Replacement = {
  /** The killed process's service (`worker 2`), by the supervisor's start line for its pid. */
  service: string | null;
  /** The supervisor started another process for that service since the kill. */
  started: boolean;
  /** One of those processes said it is ready. */
  ready: boolean;
};

/**
 * The supervisor's replacement of the worker process `pid`, killed when `mark` lines had
 * arrived: a process of the SAME service (not the other worker, which may be restarting from an
 * earlier kill) whose start line came after the kill (so a pid the kernel handed out again
 * cannot pass for an old worker, nor an old worker for a new one), and its ready line.
 */
export function replacementOf(
  lines: readonly ConsoleLine[],
  mark: number,
  pid: number,
): Replacement {
  const startOf = (l: ConsoleLine): l is Extract<ConsoleLine, { kind: "started" }> =>
    l.kind === "started" && l.pid === pid;
  // Its own start line, normally before the kill; one that was still on its way, just after.
  const own = lines.slice(0, mark).findLast(startOf) ?? lines.slice(mark).find(startOf);
  const service = own?.service ?? null;
  if (service === null) return { service, started: false, ready: false };
  const since = lines.slice(mark);
  const replacements = new Set(
    since.flatMap((l) =>
      l.kind === "started" && l.service === service && l.pid !== null && l.pid !== pid
        ? [l.pid]
        : [],
    ),
  );
  return {
    service,
    started: replacements.size > 0,
    ready: since.some((l) => l.kind === "ready" && replacements.has(l.pid)),
  };
}
