import fs from "node:fs";
import path from "node:path";

import { describe, expect, it } from "vitest";

/**
 * The console sends nothing anywhere by default, and Next.js's CLI reports anonymous usage to
 * Vercel unless NEXT_TELEMETRY_DISABLED is set: every npm script that runs the `next` CLI sets
 * it on that command (scripts/start.ts and scripts/web-server.ts set it for the build and the
 * server they start).
 */

const repoRoot = path.resolve(import.meta.dirname, "..");

/** The npm scripts' commands that run the `next` CLI without NEXT_TELEMETRY_DISABLED=1. */
export function nextCommandsWithTelemetry(scripts: Record<string, string>): string[] {
  return Object.entries(scripts).flatMap(([name, script]) =>
    script
      .split(/&&|\|\||;/)
      .map((command) => command.trim().split(/\s+/))
      .filter((words) => {
        const assignments = words.filter((word, i) =>
          words.slice(0, i + 1).every((w) => /^[A-Z_][A-Z0-9_]*=/.test(w)),
        );
        const program = words[assignments.length];
        return program === "next" && !assignments.includes("NEXT_TELEMETRY_DISABLED=1");
      })
      .map((words) => `${name}: ${words.join(" ")}`),
  );
}

describe("Next.js's telemetry", () => {
  it("finds a `next` command without the setting, and none with it", () => {
    expect(
      nextCommandsWithTelemetry({
        build: "next build",
        typecheck: "NEXT_TELEMETRY_DISABLED=1 next typegen && tsc --noEmit",
        lint: "eslint . && FOO=1 next lint",
        start: "exec node --import tsx scripts/start.ts",
      }),
    ).toEqual(["build: next build", "lint: FOO=1 next lint"]);
  });

  it("is off in every npm script that runs the next CLI", () => {
    const { scripts } = JSON.parse(
      fs.readFileSync(path.join(repoRoot, "package.json"), "utf8"),
    ) as { scripts: Record<string, string> };
    expect(Object.values(scripts).some((script) => /(^|\s)next\s/.test(script))).toBe(true);
    expect(nextCommandsWithTelemetry(scripts)).toEqual([]);
  });
});
