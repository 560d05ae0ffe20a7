/**
 * Reading small status files on the host with the shell's own `read`, not a `cat` process each:
 * a waiting run reads its status every visit, and a fleet of hosts does so all the time. POSIX
 * sh (dash runs a non-root user's commands). For text files of lines only (no NUL bytes).
 */

/**
 * `show FILE`: prints the file's lines as `cat` would (a last line without its newline gets
 * one); a missing or unreadable file prints nothing.
 */
export const SHOW_FUNCTION =
  'show() { { while IFS= read -r l || [ -n "$l" ]; do printf \'%s\\n\' "$l"; l=; done < "$1"; } 2>/dev/null; }';

/** Sets the variable `name` to the file's first line, or '' when it is missing. */
export function readFirstLine(name: string, file: string): string {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a shell variable name: ${name}`);
  return `${name}=; { IFS= read -r ${name} < ${file}; } 2>/dev/null`;
}
