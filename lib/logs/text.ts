/**
 * The run log's text rules, shared by every writer (engine notes, command output, a tailed
 * remote file) and by the tests that compare a stored log with the bytes a host wrote.
 *
 * Terminology:
 * - **line**: one `\n`-terminated line of the run log, stored without its `\n`.
 * - **`\r` folding**: a terminal redraws a progress line by writing `\r` and the new state; the
 *   log keeps only the last state. Rule (documented, tested): a trailing `\r` before the line
 *   end is dropped (CRLF is a plain line end); the line's value is its last `\r`-separated
 *   segment that is not empty; SGR colour sequences from the dropped segments are kept in front
 *   of it (they are zero-width), so a colour set before the first redraw still applies — only
 *   those after the last reset (`ESC[0m`/`ESC[m`), and at most the last 8 of them.
 * - **masking**: replacing what looks like a secret with `***` before anything is stored.
 */

/** A line longer than this (after folding) is cut, with a note saying how much was cut. */
export const MAX_LINE_CHARS = 16 * 1024;

export const MASK = "***";

// ESC [ params m — Select Graphic Rendition (colours, bold, …).
const SGR = /\u001b\[[0-9;:]*m/g;

/** Folds a line's `\r` redraws to its last state (see the terminology block). */
export function foldCarriageReturns(line: string): string {
  if (!line.includes("\r")) return line;
  const segments = line.split("\r");
  let last = segments.length - 1;
  while (last > 0 && segments[last] === "") last -= 1;
  if (last === 0) return segments[0] ?? "";
  const carried: string[] = [];
  for (let i = 0; i < last; i++) carried.push(...((segments[i] ?? "").match(SGR) ?? []));
  return reduceSgr(carried).join("") + (segments[last] ?? "");
}

const MAX_CARRIED_SGR = 8;

/** The SGR sequences that still matter: after the last reset, the last few. Folding in steps
 * gives the same result as folding at once, because this reduction composes. */
function reduceSgr(sequences: string[]): string[] {
  let from = 0;
  for (let i = 0; i < sequences.length; i++) {
    if (sequences[i] === "\u001b[0m" || sequences[i] === "\u001b[m") from = i + 1;
  }
  return sequences.slice(Math.max(from, sequences.length - MAX_CARRIED_SGR));
}

/** Cuts an over-long line, saying so in the line itself. */
export function capLineLength(line: string): string {
  if (line.length <= MAX_LINE_CHARS) return line;
  return `${line.slice(0, MAX_LINE_CHARS)} …[line cut: ${line.length - MAX_LINE_CHARS} more characters]`;
}

/** The text of a line without colour and control sequences: what search matches against. */
export function stripAnsi(text: string): string {
  // CSI sequences, OSC sequences (ended by BEL or ESC \), then single-character escapes.
  return text
    .replace(/\u001b\[[0-?]*[ -/]*[@-~]/g, "")
    .replace(/\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)?/g, "")
    .replace(/\u001b[@-Z\\-_]/g, "");
}

// Each pattern keeps its first group(s) and masks the value. Defence in depth: the console
// never puts secrets into commands, but a host's output or a future step might.
const SECRET_PATTERNS: readonly [RegExp, string][] = [
  // Proxmox API tokens: PVEAPIToken=user@realm!tokenid=uuid
  [/(PVEAPIToken[= ][^\s=!]+![^\s=]+=)[^\s"',;]+/g, `$1${MASK}`],
  // Authorization headers
  [/(Authorization:\s*(?:Bearer|Basic|Token)\s+)[^\s"',;]+/gi, `$1${MASK}`],
  // --password=… / --password … / -p… is too ambiguous, so only long options
  [
    /(--(?:password|passwd|passphrase|secret|token|api-?key|client-secret)(?:=|\s+))("[^"]*"|'[^']*'|[^\s"']+)/gi,
    `$1${MASK}`,
  ],
  // key=value, key: value, "key": "value" where the key names a secret
  [
    /(\b[A-Za-z0-9_.-]*(?:password|passwd|passphrase|secret|token|api_?key)[A-Za-z0-9_.-]*["']?\s*(?:=|:)\s*)("[^"]*"|'[^']*'|[^\s"',;}]+)/gi,
    `$1${MASK}`,
  ],
  // scheme://user:password@host
  [/(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]+:)[^\s@/]+@/gi, `$1${MASK}@`],
  // the body of a private key, should one ever be printed
  [/(-----BEGIN [A-Z ]*PRIVATE KEY-----).*/g, `$1${MASK}`],
];

/**
 * Masks what looks like a secret, and every occurrence of the literal secrets given (e.g. the
 * host's SSH password, which the console knows). Literals shorter than 4 characters are not
 * masked: they would blank out ordinary words.
 */
export function maskSecrets(line: string, literals: readonly string[] = []): string {
  let masked = line;
  for (const literal of literals) {
    if (literal.length >= 4 && masked.includes(literal)) masked = masked.split(literal).join(MASK);
  }
  for (const [pattern, replacement] of SECRET_PATTERNS) {
    // Most lines carry none of the keywords; skip the replace then (hot path: 10 000 lines/s).
    pattern.lastIndex = 0;
    if (pattern.test(masked)) masked = masked.replace(pattern, replacement);
    pattern.lastIndex = 0;
  }
  return masked;
}

/**
 * What a line of host output becomes in the log: `\r`-folded, masked, capped. Never contains
 * `\n`. The one function every writer uses, so stored logs follow one rule.
 */
export function normalizeLine(line: string, literals: readonly string[] = []): string {
  return capLineLength(maskSecrets(foldCarriageReturns(line.replace(/\n/g, " ")), literals));
}

/** `12:00:01.234` in UTC, for command headers. */
export function formatLogTime(at: Date): string {
  return at.toISOString().slice(11, 23);
}

/** The header line of a command: `▶ Step 12:00:01.234Z $ command` (secrets masked by the writer). */
export function commandHeader(step: string, command: string, at: Date): string {
  return `▶ ${step} ${formatLogTime(at)}Z $ ${command.replace(/\s*\n\s*/g, " ⏎ ")}`;
}

/** The closing line of a command: exit code (or signal) and duration. */
export function commandResult(code: number | null, signal: string | null, durationMs: number) {
  const status = code === null ? `killed by ${signal ?? "a signal"}` : `exit ${code}`;
  return `◀ ${status} in ${formatDuration(durationMs)}`;
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  return `${minutes} min ${Math.round((ms % 60_000) / 1000)} s`;
}
