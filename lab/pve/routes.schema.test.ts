import fs from "node:fs";

import { describe, expect, it } from "vitest";

import { ROUTES } from "./routes";

/**
 * The lab may not invent endpoints: every method, path and parameter of the simulated API's
 * route table must exist in Proxmox VE's published API schema (pve-docs apidata.js).
 */

type SchemaNode = {
  path: string;
  info?: Record<string, { parameters?: { properties?: Record<string, unknown> } }>;
  children?: SchemaNode[];
};

const SCHEMA_FILE = "/work/shared/reference/pve-api-schema.json";

function index(nodes: SchemaNode[], into = new Map<string, SchemaNode>()): Map<string, SchemaNode> {
  for (const node of nodes) {
    into.set(node.path, node);
    if (node.children) index(node.children, into);
  }
  return into;
}

describe.skipIf(!fs.existsSync(SCHEMA_FILE))("lab API route table against Proxmox's schema", () => {
  const schema = index(JSON.parse(fs.readFileSync(SCHEMA_FILE, "utf8")) as SchemaNode[]);

  it.each(ROUTES.map((r) => [`${r.method} ${r.path}`, r] as const))(
    "%s exists in Proxmox's API with every parameter the lab accepts",
    (_, route) => {
      const node = schema.get(route.path);
      expect(node, `path ${route.path}`).toBeDefined();
      const method = node?.info?.[route.method];
      expect(method, `${route.method} ${route.path}`).toBeDefined();
      const properties = Object.keys(method?.parameters?.properties ?? {});
      const pathParams = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
      for (const param of [...pathParams, ...route.params]) {
        expect(properties, `${route.method} ${route.path} parameter ${param}`).toContain(param);
      }
    },
  );

  it("walks a non-empty table with unique method + path pairs", () => {
    const keys = ROUTES.map((r) => `${r.method} ${r.path}`);
    expect(keys.length).toBeGreaterThanOrEqual(10);
    expect(new Set(keys).size).toBe(keys.length);
  });
});
