import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

import { describe, expect, it } from "vitest";

/**
 * The product carries no lab hook (issue 16, item 5): what `lib/` sends to a host and what
 * `deploy/` puts on one are byte for byte what a real Proxmox host gets, with no variable through
 * which the lab could point them elsewhere. The lab makes its nodes' paths the real ones
 * instead (lab/namespace). Two checks over every file of `lib/` and `deploy/`, tests included:
 *
 * - the names the lab used to set are gone, and so are the lab's own in-node paths;
 * - every `CLUPILOT_*` name is a setting README's configuration table documents, or one of the
 *   few internal names below, each of which is not a setting at all.
 */

/** Hooks the lab once set, and paths only a lab node has. */
const FORBIDDEN = [
  "CLUPILOT_HOST_ROOT",
  "CLUPILOT_STATE_DIR",
  "CLUPILOT_STORAGE_CFG",
  "CLUPILOT_IMAGE_DIR",
  "/run/clupilot-lab",
];

/** `CLUPILOT_*` names in lib/ and deploy/ that are not settings, and why each is not a hook. */
const INTERNAL: Record<string, string> = {
  CLUPILOT_DETACHED: "the mark a detached job's processes carry on the host, to prove ownership",
  CLUPILOT_SUPERVISOR_PID: "set by `npm start`'s supervisor for the processes it starts",
  CLUPILOT_VM_TAG: "a constant of deploy/bootstrap/lib/template.sh, never read from outside",
  CLUPILOT_VM_DESCRIPTION:
    "a constant of deploy/bootstrap/lib/template.sh, never read from outside",
};

const NAME = /\bCLUPILOT_[A-Z0-9_]*[A-Z0-9]\b/g;

const repoRoot = path.resolve(import.meta.dirname, "..");

/** Tracked and new (not ignored) files under lib/ and deploy/. */
function productFiles(): string[] {
  const listed = execFileSync(
    "git",
    ["ls-files", "-z", "--cached", "--others", "--exclude-standard", "lib", "deploy"],
    { cwd: repoRoot, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 },
  );
  return [...new Set(listed.split("\0").filter(Boolean))].filter((file) =>
    fs.existsSync(path.join(repoRoot, file)),
  );
}

/** The variables of README's "Configuration (environment variables)" table. */
function documentedSettings(): Set<string> {
  const readme = fs.readFileSync(path.join(repoRoot, "README.md"), "utf8");
  const heading = /^#+ Configuration \(environment variables\)$/m.exec(readme);
  if (!heading)
    throw new Error(
      'README.md has no "Configuration (environment variables)" heading: if the settings table ' +
        "moved, point this test at its new place.",
    );
  const table = readme.slice(heading.index).split("\n\n")[1] ?? "";
  return new Set(
    table
      .split("\n")
      .map((row) => /^\|\s*`([A-Z0-9_]+)`\s*\|/.exec(row)?.[1])
      .filter((name): name is string => name !== undefined),
  );
}

/** `file:line: problem` for each lab hook or undocumented name in `text`. */
export function hooksIn(file: string, text: string, documented: ReadonlySet<string>): string[] {
  const found: string[] = [];
  text.split("\n").forEach((line, i) => {
    for (const name of FORBIDDEN) {
      if (line.includes(name)) found.push(`${file}:${i + 1}: lab hook ${name}`);
    }
    for (const [name] of line.matchAll(NAME)) {
      if (FORBIDDEN.includes(name) || documented.has(name) || Object.hasOwn(INTERNAL, name))
        continue;
      found.push(`${file}:${i + 1}: ${name} is not a setting README documents`);
    }
  });
  return found;
}

describe("lib/ and deploy/ carry no lab hook", () => {
  const files = productFiles();
  const documented = documentedSettings();
  const texts = new Map(
    files.map((file) => [file, fs.readFileSync(path.join(repoRoot, file), "utf8")]),
  );

  it("reads what it checks: the product's files and README's settings", () => {
    expect(files.length).toBeGreaterThan(300);
    expect(files).toEqual(
      expect.arrayContaining([
        "lib/steps/onboarding/prepare-hostname.ts",
        "lib/steps/remote-job/remote-job.ts",
        "deploy/bootstrap/lib/template.sh",
        "deploy/bootstrap/lib/template-run.sh",
      ]),
    );
    expect(documented.size).toBeGreaterThan(15);
    expect([...documented]).toEqual(
      expect.arrayContaining(["CLUPILOT_SECRET_KEY", "CLUPILOT_POLL_SECONDS"]),
    );
  });

  it("finds a hook in the shape the product used to carry it", () => {
    expect(
      hooksIn(
        "sample",
        'cat "${CLUPILOT_HOST_ROOT:-}/etc/hosts"\nd=${CLUPILOT_NEW_PATH:-/x}',
        documented,
      ),
    ).toEqual([
      "sample:1: lab hook CLUPILOT_HOST_ROOT",
      "sample:2: CLUPILOT_NEW_PATH is not a setting README documents",
    ]);
    expect(hooksIn("sample", "cat /run/clupilot-lab/node/kernel", documented)).toHaveLength(1);
  });

  it("has none: no lab variable, no undocumented CLUPILOT_ name", () => {
    const found = [...texts].flatMap(([file, text]) => hooksIn(file, text, documented));
    expect(found).toEqual([]);
  });

  it("sees the documented settings and every internal name in use (no stale exception)", () => {
    const used = new Set(
      [...texts.values()].flatMap((text) => [...text.matchAll(NAME)].map((m) => m[0])),
    );
    expect(used.has("CLUPILOT_POLL_SECONDS")).toBe(true);
    expect(Object.keys(INTERNAL).filter((name) => !used.has(name))).toEqual([]);
  });
});
