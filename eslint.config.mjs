import { defineConfig, globalIgnores } from "eslint/config";
import nextVitals from "eslint-config-next/core-web-vitals";
import nextTs from "eslint-config-next/typescript";

export default defineConfig([
  ...nextVitals,
  ...nextTs,
  globalIgnores([
    ".next/**",
    ".data/**",
    ".lab/**",
    "node_modules/**",
    "next-env.d.ts",
    "test-results/**",
    "playwright-report/**",
    "artifacts/**",
  ]),
  {
    rules: {
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_" },
      ],
      // lib/ is the domain: it never reaches into the UI or the lab.
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            { group: ["@/lab/*", "**/lab/*"], message: "Product code must not import the lab." },
          ],
        },
      ],
    },
  },
  {
    files: ["lab/**", "test/**", "e2e/**", "bench/**", "**/*.test.ts", "scripts/**"],
    rules: { "no-restricted-imports": "off" },
  },
]);
