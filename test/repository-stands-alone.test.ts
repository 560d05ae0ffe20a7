import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

import { describe, expect, it } from "vitest";

/**
 * A clone must pass on any machine: nothing in the tree may reach into a folder beside the clone
 * or into the files of the machine it was written on. What counts as such a path:
 *
 * - the `shared` folder beside the clone and its `reference` subfolder: where the project's
 *   reference material sat on the development machine (test/fixtures/proxmox holds the copies);
 * - anything below the development machine's workspace root (`/` + `work`);
 * - a folder below a person's home: `/home/<user>/<folder>`, `/Users/<user>/<folder>`,
 *   `/root/<folder>`.
 *
 * Not flagged, because they name no file of the machine running the tests:
 * - dotfiles below a home (`.ssh/authorized_keys` under root's home): account configuration of
 *   whatever host the path is used on — the console writes exactly that on a Proxmox host;
 * - a home folder itself (`/root`, `/home/debian` in a guest image's passwd line);
 * - a path after `~`, `.`, `}` or a word character: relative, or below a variable.
 */
const MACHINE_PATH_STARTS = [
  String.raw`\.\.\/shared\b`,
  String.raw`\bshared\/reference\b`,
  String.raw`(?<![\w.~}-])\/work\/`,
  String.raw`(?<![\w.~}-])\/(?:home|Users)\/[\w.-]+\/(?!\.)[\w-]`,
  String.raw`(?<![\w.~}-])\/root\/(?!\.)[\w-]`,
];
/** The rest of the path, so that a failure names all of it. */
const REST_OF_PATH = String.raw`[^\s"'\`),;]*`;
const MACHINE_PATH = new RegExp(`(?:${MACHINE_PATH_STARTS.join("|")})${REST_OF_PATH}`, "g");

/** Every machine path in `text`, as `line: match`. */
function machinePathsIn(text: string): string[] {
  return text
    .split("\n")
    .flatMap((line, i) => [...line.matchAll(MACHINE_PATH)].map((m) => `${i + 1}: ${m[0]}`));
}

const repoRoot = path.resolve(import.meta.dirname, "..");
/** This file spells out what it looks for. */
const SELF = path.relative(repoRoot, import.meta.filename);
// The samples below are assembled, so that a plain grep of the tree for such paths (as a person
// checking a clone would run) finds none in this file either.
const SHARED = ["..", "shared"].join("/");
const WORK = "/" + "work";
const SKIPPED = new Set(["package-lock.json", SELF]);

/** Tracked files plus new ones not yet committed (not ignored): the tree a clone will get. */
function treeFiles(): string[] {
  const listed = execFileSync(
    "git",
    ["ls-files", "-z", "--cached", "--others", "--exclude-standard"],
    { cwd: repoRoot, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 },
  );
  return [...new Set(listed.split("\0").filter(Boolean))].filter(
    (file) => !SKIPPED.has(file) && !file.startsWith("node_modules/"),
  );
}

describe("the repository stands alone", () => {
  it("recognises paths of the development machine and leaves remote and relative ones", () => {
    const flagged = [
      `const SCHEMA = "${WORK}/${SHARED.slice(3)}/reference/pve-api-schema.json";`,
      `path.resolve(here, "../../../${SHARED}/reference/storage-cfg")`,
      "see /home/alice/src/clupilot/README.md",
      "cd /root/clupilot && npm start",
      "open /Users/bob/clupilot",
      `copied from ${SHARED.slice(3)}/reference/storage-cfg`,
    ];
    const kept = [
      "install -m 600 key /root/.ssh/authorized_keys",
      '"root:x:0:0:root:/root:/bin/bash\\n"',
      'dirs: ["/home/debian", "/root", "/tmp"]',
      "virt-customize -a ${DIR}/work.qcow2",
      `\${HOME}${WORK}/x and ~${WORK}/x and .${WORK}/x and src${WORK}/x`,
      "ssh debian@host cat /home/debian/.ssh/authorized_keys",
      "fs.mkdtempSync('/tmp/clupilot-cfg-')",
    ];
    for (const line of flagged) expect(machinePathsIn(line), line).not.toEqual([]);
    for (const line of kept) expect(machinePathsIn(line), line).toEqual([]);
    expect(machinePathsIn(`ok\nread '${WORK}/main/x' here\n`)).toEqual([`2: ${WORK}/main/x`]);
  });

  it("has no path outside the clone or of the machine it was written on, in any file", () => {
    const files = treeFiles();
    expect(files).toContain("package.json");
    const found: string[] = [];
    for (const file of files) {
      let text: string;
      try {
        text = fs.readFileSync(path.join(repoRoot, file), "utf8");
      } catch (error) {
        // Deleted in the working tree but not yet from the index: not part of the next commit.
        if ((error as NodeJS.ErrnoException).code === "ENOENT") continue;
        throw error;
      }
      if (text.includes("\0")) continue; // binary
      found.push(...machinePathsIn(text).map((hit) => `${file}:${hit}`));
    }
    expect(found, "copy the facts into the repository and read them relative to the file").toEqual(
      [],
    );
  });
});
