import type { SourcePosition } from "@/lib/logs/append";
import { StreamedTail } from "@/lib/logs/streamed-tail";
import type { WaitProgress } from "@/lib/pipeline/step";
import type { SshSession } from "@/lib/ssh";
import { WatchOutput, type WatchEvent } from "./remote-watch";

/** What a watch loop's reports become while the run waits (remote-watch.ts). */
export type WatchShows = {
  /** The phase line for the shown file's new first line. */
  phase?: (shown: string) => string;
  /**
   * The phase line for a line of the followed file (an apt job's last output line), null for
   * one that says nothing (blank). Applied to the lines as they are written.
   */
  phaseOfLine?: (line: string) => string | null;
  /**
   * The followed file's lines go into the run log under `step`, going on from `from`: where
   * the visit that polled left the file's run-log position.
   */
  log?: { step: string; from: SourcePosition };
};

/**
 * Progress is written at most this often: a chatty log costs a transaction per interval, not
 * per line, and still reads as live.
 */
export const PROGRESS_INTERVAL_MS = 1000;

/**
 * Runs a watch loop (remote-watch.ts) over `session` and shows what it reports while it waits:
 * the phase line and the followed file's lines, through `progress` (written only while the run
 * still waits where it polled). Resolves with the loop's verdict — `true`: what the next visit
 * decides on changed — or `false` once the run has moved on (nobody left to wait for). A write
 * in flight is over before it resolves; lines not written by then are the next visit's to read
 * (its tail goes on from the position written last).
 */
export async function runWatch(
  session: SshSession,
  command: string,
  options: {
    signal: AbortSignal;
    timeoutMs: number;
    progress: WaitProgress;
    shows: WatchShows;
  },
): Promise<{ changed: boolean; code: number | null; stderr: string }> {
  const { shows, progress } = options;
  const output = new WatchOutput();
  const tail = shows.log === undefined ? null : new StreamedTail(shows.log.from, shows.log.step);
  const movedOn = new AbortController();
  let phase: string | undefined;
  let failure: unknown = null;
  let writing: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | null = null;

  const write = async () => {
    const log = tail?.take() ?? null;
    if (log !== null && shows.phaseOfLine !== undefined)
      for (const entry of log.entries.toReversed()) {
        const said = entry.kind === "file" ? shows.phaseOfLine(entry.text) : null;
        if (said === null) continue;
        phase = said;
        break;
      }
    const shown = phase;
    phase = undefined;
    if (log === null && shown === undefined) return;
    const written = await progress.report({
      ...(shown === undefined ? {} : { phase: shown }),
      ...(log === null ? {} : { log }),
    });
    if (!written) movedOn.abort();
  };
  const writeSoon = () => {
    if (timer !== null || movedOn.signal.aborted || failure !== null) return;
    timer = setTimeout(() => {
      timer = null;
      writing = writing.then(write).catch((error: unknown) => {
        failure = error;
        movedOn.abort();
      });
    }, PROGRESS_INTERVAL_MS);
  };
  const apply = (event: WatchEvent) => {
    switch (event.kind) {
      case "shown":
        if (shows.phase === undefined) return;
        phase = shows.phase(event.text);
        return writeSoon();
      case "file":
        tail?.recreated(event.identity);
        return writeSoon();
      case "line":
        return tail?.line(event.text);
      case "at":
        tail?.at(event.offset);
        return writeSoon();
      case "verdict":
        return;
    }
  };

  let result: { code: number | null; stderr: string } | null = null;
  try {
    const done = await session.exec(command, {
      signal: AbortSignal.any([options.signal, movedOn.signal]),
      timeoutMs: options.timeoutMs,
      maxOutputBytes: 64 * 1024,
      onOutput: (stream, chunk) => {
        if (stream === "stdout") for (const event of output.push(chunk)) apply(event);
      },
    });
    result = { code: done.code, stderr: done.stderr };
  } catch (error) {
    // Ended because the run moved on (or a write failed): that, not the closed channel, is
    // what happened.
    if (options.signal.aborted || !movedOn.signal.aborted) throw error;
  } finally {
    if (timer !== null) clearTimeout(timer);
    timer = null;
    await writing;
  }
  if (failure !== null) throw failure;
  if (movedOn.signal.aborted || result === null) return { changed: false, code: null, stderr: "" };
  // What came with the loop's end and was not written yet is left to the visit that follows
  // (woken now, or the poll's own): its tail reads on from the position written last. Writing
  // it first would only delay that visit.
  return {
    changed: result.code === 0 ? output.changed() : false,
    code: result.code,
    stderr: result.stderr,
  };
}
