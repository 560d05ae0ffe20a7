import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { sh } from "@/lib/ssh";
import { readFirstLine, SHOW_FUNCTION } from "./shell-read";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "clupilot-shell-read-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const CONTENTS: Record<string, string> = {
  lines: "running\n  indented \\ backslash\n\ttab\n",
  "no-newline": "ok",
  "blank-lines": "\n\nphase: copying\n\n",
  empty: "",
};
for (const [name, text] of Object.entries(CONTENTS)) fs.writeFileSync(path.join(dir, name), text);

const run = (shell: string, script: string) =>
  execFileSync(shell, ["-c", script], { encoding: "utf8" });

describe.each(["/bin/sh", "/bin/bash"])("reading status files with %s's own read", (shell) => {
  it("show prints what cat prints, a missing last newline added; a missing file prints nothing", () => {
    for (const [name, text] of Object.entries(CONTENTS)) {
      const shown = run(shell, `${SHOW_FUNCTION}\nshow ${sh`${path.join(dir, name)}`}; echo END`);
      expect(shown).toBe(`${text}${text === "" || text.endsWith("\n") ? "" : "\n"}END\n`);
    }
    expect(run(shell, `${SHOW_FUNCTION}\nshow ${sh`${path.join(dir, "missing")}`}; echo END`)).toBe(
      "END\n",
    );
  });

  it("readFirstLine takes the first line, '' for a missing file, and never keeps an old value", () => {
    const script = (file: string) =>
      `v=old\n${readFirstLine("v", sh`${path.join(dir, file)}`)}\nprintf '[%s]' "$v"`;
    expect(run(shell, script("lines"))).toBe("[running]");
    expect(run(shell, script("no-newline"))).toBe("[ok]");
    expect(run(shell, script("missing"))).toBe("[]");
    expect(run(shell, script("empty"))).toBe("[]");
  });
});
