import { describe, expect, it } from "vitest";

import { acceptsParameter, pveApiMethod } from "@/test/fixtures/proxmox/api-schema";
import { ROUTES } from "./routes";

/**
 * The lab may not invent endpoints: every method, path and parameter of the simulated API's
 * route table must exist in Proxmox VE's published API schema (test/fixtures/proxmox).
 */
describe("lab API route table against Proxmox's schema", () => {
  it.each(ROUTES.map((r) => [`${r.method} ${r.path}`, r] as const))(
    "%s exists in Proxmox's API with every parameter the lab accepts",
    (_, route) => {
      const method = pveApiMethod(route.method, route.path);
      expect(method, `${route.method} ${route.path}`).toBeDefined();
      const pathParams = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
      for (const param of [...pathParams, ...route.params]) {
        expect(
          acceptsParameter(method!, param),
          `${route.method} ${route.path} parameter ${param}`,
        ).toBe(true);
      }
    },
  );

  it("walks a non-empty table with unique method + path pairs", () => {
    const keys = ROUTES.map((r) => `${r.method} ${r.path}`);
    expect(keys.length).toBeGreaterThanOrEqual(10);
    expect(new Set(keys).size).toBe(keys.length);
  });
});
