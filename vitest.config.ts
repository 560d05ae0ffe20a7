import path from "node:path";
import { defineConfig } from "vitest/config";

const alias = {
  "@": path.resolve(import.meta.dirname),
  // As in every Node process outside Next.js's bundler (tsconfig.json "paths"): no browser
  // bundle here, so the marker is the no-op React Server environments get.
  "server-only": path.resolve(import.meta.dirname, "node_modules/server-only/empty.js"),
};

// In CI (.ci/run sets CI) each run also leaves every file's and test's timing as JSON, named
// after the projects it ran (npm test runs vitest twice), for docs/benchmarks.md ("The suite").
const projectsRun = process.argv.flatMap((arg, i, all) =>
  arg === "--project" ? [all[i + 1]] : arg.startsWith("--project=") ? [arg.slice(10)] : [],
);
const timingReport = path.join(
  import.meta.dirname,
  "node_modules/.cache/vitest-timings",
  `${projectsRun.join("+") || "all"}.json`,
);

export default defineConfig({
  resolve: { alias },
  test: {
    ...(process.env.CI
      ? { reporters: ["default", ["json", { outputFile: timingReport }]] as const }
      : {}),
    projects: [
      {
        resolve: { alias },
        test: {
          name: "unit",
          include: ["{lib,lab,worker,app,components,deploy,test,scripts,bench}/**/*.test.ts"],
          exclude: ["**/*.int.test.ts", "**/*.build.test.ts", "node_modules/**"],
          // Both cores (vitest's default leaves one free), and one process per worker instead of
          // one per file: starting a process and importing the modules again for each of the 100
          // files was nearly all of the time (191 s against 35 s on a busy machine). Files keep
          // no state between them (a run with the file order shuffled passes), spies are put back.
          maxWorkers: 2,
          isolate: false,
          restoreMocks: true,
        },
      },
      {
        resolve: { alias },
        test: {
          name: "integration",
          include: ["{lib,lab,worker,app,test}/**/*.int.test.ts"],
          globalSetup: ["./test/global-setup.ts"],
          testTimeout: 60_000,
          hookTimeout: 60_000,
          // Files run in parallel, each against its own database. Three on two cores: most of a
          // file's time is spent waiting (lab hosts' timers, SSH round trips, child processes
          // starting), not computing; docs/benchmarks.md has the figures.
          maxWorkers: 3,
          // Unit tests first (group 0), then the integration files.
          sequence: { groupOrder: 1 },
        },
      },
      {
        resolve: { alias },
        test: {
          // Tests of the production build (`npm run build`): npm test runs them after building.
          name: "after-build",
          include: ["test/**/*.build.test.ts"],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});
