import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ensureProductionBuild, hasProductionBuild } from "./production-build";
import { BenchCannotRun } from "./run-bench";

/**
 * The build rule against throw-away project folders whose `npm run build` (real npm) stands in
 * for `next build`: what matters here is when it runs and what the bench says after.
 */
const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) fs.rmSync(folder, { recursive: true, force: true });
});

function project(build: string, built = false): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "clupilot-bench-build-"));
  folders.push(root);
  fs.writeFileSync(
    path.join(root, "package.json"),
    JSON.stringify({ name: "build-check", private: true, scripts: { build } }),
  );
  if (built) {
    fs.mkdirSync(path.join(root, ".next"));
    fs.writeFileSync(path.join(root, ".next", "BUILD_ID"), "existing\n");
  }
  return root;
}

describe("a bench's production build (ensureProductionBuild)", { timeout: 60_000 }, () => {
  it("uses the build there is, without building", async () => {
    const root = project("echo built again > .next/BUILD_ID", true);
    await ensureProductionBuild(root);
    expect(fs.readFileSync(path.join(root, ".next", "BUILD_ID"), "utf8")).toBe("existing\n");
  });

  it("runs `npm run build` first when there is no build", async () => {
    const root = project("mkdir -p .next && echo fresh > .next/BUILD_ID");
    expect(hasProductionBuild(root)).toBe(false);
    await ensureProductionBuild(root);
    expect(hasProductionBuild(root)).toBe(true);
    expect(fs.readFileSync(path.join(root, ".next", "BUILD_ID"), "utf8")).toBe("fresh\n");
  });

  it("when the build fails, stops saying what to run (no stack trace)", async () => {
    const root = project("echo 'Type error: nope' >&2; exit 3");
    const failed = ensureProductionBuild(root);
    await expect(failed).rejects.toBeInstanceOf(BenchCannotRun);
    await expect(failed).rejects.toThrow(
      "`npm run build` failed (exit 3): fix what it printed above, run `npm run build`, then this bench again",
    );
  });

  it("when the build succeeds without a BUILD_ID, says so instead of starting a server", async () => {
    const root = project("true");
    await expect(ensureProductionBuild(root)).rejects.toThrow(
      "`npm run build` succeeded but left no .next/BUILD_ID",
    );
  });
});
