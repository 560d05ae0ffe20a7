import { readFile } from "node:fs/promises";
import path from "node:path";
import { DEFAULT_SCRIPTS_DIR } from "./build-vm-template";

/**
 * The host's own configuration makes sure VM disks have somewhere to go, template or not
 * (issue 19: without a published catalog nothing else added `images`, and RegisterCapacity
 * failed). It runs deploy/bootstrap/lib/template.sh's `ensure_image_storage` itself — the one
 * implementation of the rules: detect first, `pvesm set` keeping every other content type,
 * never a write into storage.cfg — sent on stdin, so nothing is left on the host.
 */
export const ENSURE_IMAGE_STORAGE =
  "bash -s # ensure_image_storage from template.sh, sent on stdin";

const MARKER = "clupilot-image-storage";

/** What template.sh expects from its caller, then the library, then the call and the verdict. */
export function ensureImageStorageScript(templateLibrary: string): string {
  return [
    "set -u",
    "log() { printf '%s\\n' \"$*\"; }",
    "die() { printf '%s\\n' \"$*\" >&2; exit 1; }",
    templateLibrary,
    `before="$(detect_vm_storage)" || die "cannot read this node's name (hostname) to choose a storage"`,
    "ensure_image_storage",
    `printf '${MARKER} before=%s after=%s\\n' "$before" "$(detect_vm_storage)"`,
    "",
  ].join("\n");
}

export async function readTemplateLibrary(scriptsDir = DEFAULT_SCRIPTS_DIR): Promise<string> {
  const file = path.join(/* turbopackIgnore: true */ scriptsDir, "template.sh");
  // A file of the host's own, read at run time: not for the bundler to trace (it would take
  // the whole project along and warn on every build).
  return readFile(/* turbopackIgnore: true */ file, "utf8");
}

export type ImageStorageResult =
  | { kind: "in-place"; storage: string }
  | { kind: "added"; storage: string }
  | { kind: "refused"; reason: string };

export function parseImageStorageResult(
  code: number | null,
  stdout: string,
  stderr: string,
): ImageStorageResult {
  const verdict = new RegExp(`^${MARKER} before=(\\S*) after=(\\S*)$`, "m").exec(stdout);
  if (code === 0 && verdict && verdict[2]) {
    return verdict[1]
      ? { kind: "in-place", storage: verdict[1] }
      : { kind: "added", storage: verdict[2] };
  }
  const said = stderr.trim().split("\n").pop()?.trim();
  return {
    kind: "refused",
    reason:
      said ||
      `ensuring an image storage ended with exit ${code ?? "(none: the command was cut off)"} and no reason; check pvesm status on the host and Retry`,
  };
}
