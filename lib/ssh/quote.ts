/**
 * THE one shell-quoting helper. Every command the console sends to a host is built with
 * `sh` / `shQuote` / `shJoin`, so a value (a path, a VMID, a URL an operator typed) can never
 * become shell syntax.
 *
 * POSIX single-quote style: inside '…' every byte is literal except `'` itself, which is
 * written as `'\''` (close, escaped quote, reopen). That holds for newlines, `$()`, backticks,
 * globs and non-ASCII text alike. NUL cannot be represented in a shell argument at all, so it
 * is refused rather than silently truncating the value.
 */

export type ShValue = string | number;

/** Quote one value as a single shell word. Numbers are quoted too (they must be finite). */
export function shQuote(value: ShValue): string {
  let text: string;
  if (typeof value === "number") {
    if (!Number.isFinite(value)) {
      throw new Error(`shQuote: refusing to quote a non-finite number (${String(value)})`);
    }
    text = String(value);
  } else if (typeof value === "string") {
    text = value;
  } else {
    throw new Error(`shQuote: expected a string or a number, got ${typeof value}`);
  }
  if (text.includes("\0")) {
    throw new Error("shQuote: a NUL byte cannot be passed in a shell command");
  }
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/** Quote every argument and join them with spaces: `shJoin(["rm", "-f", path])`. */
export function shJoin(args: readonly ShValue[]): string {
  return args.map(shQuote).join(" ");
}

/**
 * Tagged template that quotes every interpolated value:
 * `` sh`mkdir -p -- ${dir} && chmod ${mode} ${file}` ``. An array interpolates as several
 * words (each quoted). The literal parts are trusted shell written by us.
 */
export function sh(
  strings: TemplateStringsArray,
  ...values: ReadonlyArray<ShValue | readonly ShValue[]>
): string {
  let out = strings[0] ?? "";
  values.forEach((value, index) => {
    out += Array.isArray(value) ? shJoin(value) : shQuote(value as ShValue);
    out += strings[index + 1] ?? "";
  });
  return out;
}
