import type { LogChunk, LogLineKind } from "@/lib/logs/chunks";
import { stripAnsi } from "@/lib/logs/text";

/**
 * The viewer's model of a run log, kept outside React state: 100 000 lines are appended in place
 * (no array copies per chunk) and React re-renders once per animation frame with a new version.
 *
 * Terminology:
 * - **line**: one log line, numbered run-wide from 1 (`#L123` permalinks use that number).
 * - **section**: consecutive lines of one step — collapsible; a step visited again after another
 *   step (a retry) starts a new section.
 * - **row**: what the virtualized list draws: a section header or a line of an open section.
 */
export type LogLine = {
  /** Run-wide line number (1-based). */
  n: number;
  text: string;
  /** `text` without colours and control sequences: what search matches. */
  plain: string;
  kind: LogLineKind;
  at: string;
  section: number;
};

export type Section = {
  index: number;
  step: string;
  /** Index into `lines` of the first line, and one past the last. */
  start: number;
  end: number;
  /** A command in it ended with a non-zero exit, or the run failed in it. */
  failed: boolean;
  /** The operator aborted the run in it: its own state, never shown as a failure. */
  aborted: boolean;
};

/** A chunk as the server's stream sends it. */
export type IncomingChunk = LogChunk;

export class LogModel {
  readonly lines: LogLine[] = [];
  readonly sections: Section[] = [];
  lastSeq = 0;

  /** Appends a chunk; chunks at or below `lastSeq` (a duplicate delivery) are ignored. */
  append(chunk: IncomingChunk): boolean {
    if (chunk.seq <= this.lastSeq) return false;
    this.lastSeq = chunk.seq;
    let section = this.sections[this.sections.length - 1];
    if (!section || section.step !== chunk.step) {
      section = {
        index: this.sections.length,
        step: chunk.step,
        start: this.lines.length,
        end: this.lines.length,
        failed: false,
        aborted: false,
      };
      this.sections.push(section);
    }
    for (let i = 0; i < chunk.lines.length; i++) {
      const text = chunk.lines[i]!;
      this.lines.push({
        n: chunk.firstLine + i,
        text,
        plain: text.includes("\u001b") ? stripAnsi(text) : text,
        kind: chunk.kind,
        at: chunk.at,
        section: section.index,
      });
      if (chunk.kind === "run" && text.startsWith("■ run aborted")) section.aborted = true;
      else if (isFailureLine(chunk.kind, text)) section.failed = true;
    }
    section.end = this.lines.length;
    return true;
  }

  /** Index into `lines` of line number `n`, or -1 (not loaded, or dropped at the cap). */
  indexOfLine(n: number): number {
    const first = this.lines[0]?.n ?? 1;
    const guess = n - first;
    if (this.lines[guess]?.n === n) return guess;
    let lo = 0;
    let hi = this.lines.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const value = this.lines[mid]!.n;
      if (value === n) return mid;
      if (value < n) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }
}

function isFailureLine(kind: LogLineKind, text: string): boolean {
  if (kind === "result") return !text.startsWith("◀ exit 0 ");
  if (kind === "run") return text.startsWith("■ run failed");
  return false;
}

export type RunStatus = "running" | "succeeded" | "failed";

/**
 * Which sections are open when the operator has not chosen: while the run runs, all (what is
 * happening now is at the bottom); after a failure, only the failing one (the last section of
 * the failed step); after success, none — the headers read as a summary.
 */
export function defaultOpen(
  sections: readonly Section[],
  status: RunStatus,
  failedStep: string | null,
): (section: Section) => boolean {
  if (status === "running") return () => true;
  if (status === "succeeded") return () => false;
  let failing = -1;
  for (let i = sections.length - 1; i >= 0; i--) {
    if (sections[i]!.step === failedStep) {
      failing = i;
      break;
    }
  }
  if (failing < 0) failing = sections.length - 1;
  return (section) => section.index === failing;
}

/** Rows to draw: `-(section + 1)` for a section header, a line index otherwise. */
export function buildRows(
  sections: readonly Section[],
  isOpen: (section: Section) => boolean,
): Int32Array {
  let count = 0;
  for (const section of sections) count += 1 + (isOpen(section) ? section.end - section.start : 0);
  const rows = new Int32Array(count);
  let r = 0;
  for (const section of sections) {
    rows[r++] = -(section.index + 1);
    if (!isOpen(section)) continue;
    for (let i = section.start; i < section.end; i++) rows[r++] = i;
  }
  return rows;
}

export type Match = { line: number; start: number; end: number };

/** Case-insensitive matches of `query` over every line (open or not), in order. */
export function searchLines(lines: readonly LogLine[], query: string, limit = 100_000): Match[] {
  if (query.length === 0) return [];
  const needle = query.toLowerCase();
  const matches: Match[] = [];
  for (let i = 0; i < lines.length && matches.length < limit; i++) {
    const haystack = lines[i]!.plain.toLowerCase();
    for (
      let at = haystack.indexOf(needle);
      at >= 0 && matches.length < limit;
      at = haystack.indexOf(needle, at + needle.length)
    ) {
      matches.push({ line: i, start: at, end: at + needle.length });
    }
  }
  return matches;
}

/**
 * What a line shows. The console's own status reads of a job on the host (the watch's shell
 * script, `clupilot_sig` …) are the console's machinery, not the operator's: their command line
 * says what it does; the raw log (download) keeps the script as it ran.
 */
export function displayText(line: Pick<LogLine, "kind" | "text">): string {
  if (line.kind !== "command" || !INTERNAL_SCRIPT.test(line.text)) return line.text;
  const prompt = line.text.indexOf(" $ ");
  const head = prompt >= 0 ? line.text.slice(0, prompt + 3) : "";
  return `${head}(reads the job's status on the host — the console's own script, in full in the raw log)`;
}

const INTERNAL_SCRIPT = /clupilot_sig\(\)|clupilot-watch/;
