import path from "node:path";
import { defineConfig } from "vitest/config";

const alias = {
  "@": path.resolve(import.meta.dirname),
  // As in every Node process outside Next.js's bundler (tsconfig.json "paths"): no browser
  // bundle here, so the marker is the no-op React Server environments get.
  "server-only": path.resolve(import.meta.dirname, "node_modules/server-only/empty.js"),
};

export default defineConfig({
  resolve: { alias },
  test: {
    projects: [
      {
        resolve: { alias },
        test: {
          name: "unit",
          include: ["{lib,lab,worker,app,components,deploy,test,scripts,bench}/**/*.test.ts"],
          exclude: ["**/*.int.test.ts", "**/*.build.test.ts", "node_modules/**"],
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
          // Two cores: files run in parallel, each against its own database.
          maxWorkers: 2,
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
