import fs from "node:fs";
import path from "node:path";
import { exitOf, spawnUntilEnd } from "./processes";
import { BenchCannotRun } from "./run-bench";

const repositoryRoot = path.resolve(import.meta.dirname, "../..");

/** `next build` writes .next/BUILD_ID once the build is complete (`npm start` asks the same). */
export function hasProductionBuild(root: string): boolean {
  return fs.existsSync(path.join(root, ".next", "BUILD_ID"));
}

/**
 * The one rule for a bench that needs the production build: the build there is is used; when
 * there is none, `npm run build` runs first (its output on stderr, the bench's stdout stays its
 * figures); when that fails, the bench stops saying what to run.
 */
export async function ensureProductionBuild(root = repositoryRoot): Promise<void> {
  if (hasProductionBuild(root)) return;
  console.error("bench: no production build (.next/BUILD_ID): running `npm run build` first");
  const build = spawnUntilEnd("npm run build", "npm", ["run", "build"], {
    cwd: root,
    stdio: ["ignore", process.stderr, process.stderr],
  });
  const exit = await exitOf(build).catch((error: Error) => `not started (${error.message})`);
  if (exit !== 0) {
    throw new BenchCannotRun(
      `\`npm run build\` failed (exit ${exit}): fix what it printed above, run \`npm run build\`, then this bench again`,
    );
  }
  if (!hasProductionBuild(root)) {
    throw new BenchCannotRun(
      "`npm run build` succeeded but left no .next/BUILD_ID: run `npm run build` and check its output, then this bench again",
    );
  }
}
