import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";

import { describe, expect, it } from "vitest";

import { HOSTILE_PATHS, HOSTILE_VALUES, commandCatalog } from "@/test/command-catalog";
import { formatMode, uploadCommand } from "./commands";
import { sh, shJoin, shQuote } from "./quote";

/** Parses (never runs) a command with the host's POSIX shell (`sh -n`): each one must parse. */
function shellSyntaxError(command: string): string | null {
  const result = spawnSync("/bin/sh", ["-n", "-c", command], { encoding: "utf8" });
  return result.status === 0 ? null : result.stderr || `exit ${String(result.status)}`;
}

/** Runs `printf %s <word>` in a real shell and returns exactly what it printed. */
function printThroughShell(shell: string, word: string): string {
  return execFileSync(shell, ["-c", `printf %s ${word}`], { encoding: "utf8" });
}

// One `sh -n` process per sample, synchronously: on a machine where process start-up is slow
// (a CI rehearsal saw 5 s pass for one entry) the default 5-s budget measures the machine.
const SYNTAX_CHECK_TIMEOUT_MS = 60_000;

describe("every command the console can send passes sh -n", () => {
  for (const entry of commandCatalog) {
    it(entry.name, { timeout: SYNTAX_CHECK_TIMEOUT_MS }, () => {
      const samples = entry.samples();
      expect(samples.length).toBeGreaterThan(0);
      for (const command of samples) {
        expect(shellSyntaxError(command), command).toBeNull();
      }
    });
  }
});

describe("shQuote", () => {
  it.each(["/bin/sh", "/bin/bash"])(
    "round-trips every hostile string through %s unchanged",
    (shell) => {
      for (const value of HOSTILE_VALUES) {
        expect(printThroughShell(shell, shQuote(value))).toBe(value);
      }
    },
  );

  it("round-trips random strings of printable and control characters", () => {
    const alphabet = ` \t\n'"\\$\`!#&*()[]{};|<>?~=%^,.:/-_aZ09é日🚀\r\u0001\u007f`;
    const values: string[] = [];
    let seed = 42;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
    for (let i = 0; i < 200; i += 1) {
      const chars = [...alphabet];
      let value = "";
      const length = next() % 24;
      for (let j = 0; j < length; j += 1) value += chars[next() % chars.length];
      values.push(value);
    }
    // One shell run for all of them: printf each, separated by NUL, then compare.
    const script = values.map((value) => `printf '%s\\0' ${shQuote(value)}`).join("\n");
    const out = execFileSync("/bin/sh", ["-c", script], { encoding: "utf8" });
    expect(out.split("\0").slice(0, -1)).toEqual(values);
  });

  it("quotes numbers too", () => {
    expect(shQuote(9000)).toBe("'9000'");
    expect(shQuote(-1.5)).toBe("'-1.5'");
    expect(() => shQuote(Number.NaN)).toThrow(/non-finite/);
    expect(() => shQuote(Number.POSITIVE_INFINITY)).toThrow(/non-finite/);
  });

  it("refuses NUL bytes instead of truncating the value", () => {
    expect(() => shQuote("a\0b")).toThrow(/NUL/);
    expect(() => sh`echo ${"x\0"}`).toThrow(/NUL/);
  });

  it("makes the empty string one empty word", () => {
    expect(
      execFileSync("/bin/sh", ["-c", `set -- ${shQuote("")}; echo $#`], { encoding: "utf8" }),
    ).toBe("1\n");
  });
});

describe("sh and shJoin", () => {
  it("quote every interpolated value, numbers and arrays included", () => {
    expect(sh`qm set ${9000} --name ${"a b"}`).toBe("qm set '9000' --name 'a b'");
    expect(sh`rm -f -- ${["x y", "$(z)"]}`).toBe("rm -f -- 'x y' '$(z)'");
    expect(shJoin(["echo", "it's"])).toBe(`'echo' 'it'\\''s'`);
  });

  it("keeps each hostile value one argument", () => {
    const command = sh`printf '%s\\0' ${HOSTILE_VALUES.slice(0, -1)}`;
    const out = execFileSync("/bin/sh", ["-c", command], { encoding: "utf8" });
    expect(out.split("\0").slice(0, -1)).toEqual(HOSTILE_VALUES.slice(0, -1));
  });
});

describe("uploadCommand", () => {
  it("writes hostile paths atomically in a real shell, nothing else", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "clupilot-upload-"));
    try {
      for (const [index, remotePath] of HOSTILE_PATHS.entries()) {
        const content = `file ${index}: ${remotePath}\n`;
        const sha256 = sha256Hex(content);
        const tmpPath = `${remotePath}.clupilot-tmp-${index}`;
        const out = execFileSync(
          "/bin/sh",
          ["-c", uploadCommand({ remotePath, tmpPath, mode: 0o640, sha256 })],
          {
            cwd: dir,
            input: content,
            encoding: "utf8",
          },
        );
        expect(out.split(" ")[0]).toBe(sha256);
        expect(readFileSync(path.join(dir, remotePath), "utf8")).toBe(content);
      }
      // Nothing a hostile path could have run or left behind:
      const listing = execFileSync(
        "find",
        [".", "-name", "*clupilot-tmp*", "-o", "-name", "pwned"],
        { cwd: dir, encoding: "utf8" },
      );
      expect(listing).toBe("");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("refuses a checksum mismatch and leaves the target untouched", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "clupilot-upload-"));
    try {
      execFileSync("/bin/sh", ["-c", "printf old > target"], { cwd: dir });
      const result = spawnSync(
        "/bin/sh",
        [
          "-c",
          uploadCommand({
            remotePath: "target",
            tmpPath: "target.tmp",
            mode: 0o644,
            sha256: "0".repeat(64),
          }),
        ],
        { cwd: dir, input: "new", encoding: "utf8" },
      );
      expect(result.status).toBe(3);
      expect(result.stderr).toMatch(/sha256 on the host is/);
      expect(readFileSync(path.join(dir, "target"), "utf8")).toBe("old");
      expect(execFileSync("ls", ["-A"], { cwd: dir, encoding: "utf8" })).toBe("target\n");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("rejects a directory target, a bad checksum format and bad modes", () => {
    const base = { tmpPath: "t", mode: 0o644, sha256: "a".repeat(64) };
    expect(() => uploadCommand({ ...base, remotePath: "" })).toThrow();
    expect(() => uploadCommand({ ...base, remotePath: "dir/" })).toThrow();
    expect(() => uploadCommand({ ...base, remotePath: "f", sha256: "XYZ" })).toThrow();
    expect(() => formatMode(0o10000)).toThrow();
    expect(formatMode(0o755)).toBe("0755");
  });
});

function sha256Hex(text: string): string {
  return execFileSync("sha256sum", { input: text, encoding: "utf8" }).split(" ")[0] ?? "";
}
