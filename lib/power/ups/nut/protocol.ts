/**
 * The line grammar of NUT's network protocol (upsd, TCP 3493), as NUT's own parser (parseconf)
 * reads it: words separated by spaces or tabs; a word in double quotes may hold spaces; a
 * backslash takes the next character literally, inside quotes (`\"`, `\\`) and outside.
 * Source: NUT docs/net-protocol.txt, "Command reference" ("Embedded quotes are escaped with
 * backslashes. Embedded backslashes are also escaped by representing them as \\.").
 */

export class NutGrammarError extends Error {
  override readonly name = "NutGrammarError";
}

/** The words of one protocol line (without its line break), quotes and escapes resolved. */
export function splitNutWords(line: string): string[] {
  const words: string[] = [];
  let word: string | null = null;
  let quoted = false;
  for (let i = 0; i < line.length; i += 1) {
    const char = line[i]!;
    if (char === "\\") {
      i += 1;
      if (i >= line.length) throw new NutGrammarError(`line ends in a lone backslash: ${line}`);
      word = (word ?? "") + line[i];
    } else if (quoted) {
      if (char === '"') quoted = false;
      else word = (word ?? "") + char;
    } else if (char === '"') {
      quoted = true;
      word ??= "";
    } else if (char === " " || char === "\t") {
      if (word !== null) words.push(word);
      word = null;
    } else {
      word = (word ?? "") + char;
    }
  }
  if (quoted) throw new NutGrammarError(`unterminated quote in: ${line}`);
  if (word !== null) words.push(word);
  return words;
}

/**
 * One argument as a quoted word. A line break (or NUL) cannot travel inside a word: it would
 * end the line and let the rest be read as another command, so it is refused.
 */
export function quoteNutWord(value: string): string {
  if (/[\r\n\0]/.test(value)) {
    throw new NutGrammarError("a NUT protocol word cannot contain a line break or NUL");
  }
  return `"${value.replace(/[\\"]/g, (char) => `\\${char}`)}"`;
}

/** `ERR <CODE> [extra…]` → the code (`DATA-STALE`, `ACCESS-DENIED`, …); null for other lines. */
export function nutErrorCode(words: readonly string[]): string | null {
  return words[0] === "ERR" ? (words[1] ?? "") : null;
}

/**
 * The variables of one `LIST VAR <ups>` answer, from the lines between `BEGIN LIST VAR <ups>`
 * and `END LIST VAR <ups>` (both excluded). Each is `VAR <ups> <name> "<value>"`.
 */
export function parseVarLines(ups: string, lines: readonly string[]): Map<string, string> {
  const vars = new Map<string, string>();
  for (const line of lines) {
    const words = splitNutWords(line);
    if (words.length !== 4 || words[0] !== "VAR" || words[1] !== ups) {
      throw new NutGrammarError(`unexpected line in LIST VAR ${ups}: ${line}`);
    }
    vars.set(words[2]!, words[3]!);
  }
  return vars;
}
