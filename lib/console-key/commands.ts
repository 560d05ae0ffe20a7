import { sh } from "@/lib/ssh/quote";

/**
 * The shell commands that install and remove the console's key in the login user's
 * `~/.ssh/authorized_keys`. They run as the SSH user itself (not through sudo): the key belongs
 * to the account the console logs in as. Every value is quoted by `sh`; the catalog
 * (test/command-catalog.ts) runs them through `sh -n`.
 */

/**
 * The one line an operator pastes on a new host (shown on the add-host form and the key page).
 * Idempotent, like the console's own install: a second paste adds no second line.
 */
export function installKeyCommand(publicKeyLine: string): string {
  const line = publicKeyLine.trim();
  return (
    "mkdir -p ~/.ssh && chmod 700 ~/.ssh && touch ~/.ssh/authorized_keys && " +
    sh`chmod 600 ~/.ssh/authorized_keys && (grep -qxF ${line} ~/.ssh/authorized_keys || printf '%s\\n' ${line} >> ~/.ssh/authorized_keys)`
  );
}

/**
 * Appends the line unless the exact line is already there; creates `~/.ssh` (0700) and the
 * file (0600) when missing. A file without a final newline gets one first, so the key never
 * glues onto the last line. Prints `added` or `present`.
 */
export function appendKeyCommand(publicKeyLine: string): string {
  const line = publicKeyLine.trim();
  return (
    'umask 077; mkdir -p ~/.ssh && f=~/.ssh/authorized_keys && touch "$f" && ' +
    sh`if grep -qxF ${line} "$f"; then echo present; else ` +
    // $(…) drops a trailing newline: non-empty means the last byte is not one.
    `{ if [ -n "$(tail -c 1 "$f")" ]; then echo; fi; ` +
    sh`printf '%s\\n' ${line}; } >> "$f" && echo added; fi`
  );
}

/**
 * Removes every line exactly equal to the given one, through a temp file in the same folder
 * and `mv` (atomic: sshd never reads a half-written file), keeping the file's mode. Prints
 * `removed` or `absent`. Other lines (other people's keys, comments) stay byte for byte.
 */
export function removeKeyCommand(publicKeyLine: string): string {
  const line = publicKeyLine.trim();
  return (
    "f=~/.ssh/authorized_keys; " +
    sh`if [ -f "$f" ] && grep -qxF ${line} "$f"; then ` +
    'tmp="$f.clupilot-tmp.$$" && ' +
    sh`{ grep -vxF ${line} "$f" || [ $? -eq 1 ]; } > "$tmp" && ` +
    'chmod --reference="$f" "$tmp" && mv -f "$tmp" "$f" && echo removed; ' +
    "else echo absent; fi"
  );
}

/** Exit 0 when the exact line is in authorized_keys, 1 when not. */
export function hasKeyCommand(publicKeyLine: string): string {
  return sh`grep -qxF ${publicKeyLine.trim()} ~/.ssh/authorized_keys`;
}
