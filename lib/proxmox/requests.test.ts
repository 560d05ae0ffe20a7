import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { PROXMOX_REQUESTS } from "./client";

type SchemaNode = { path: string; info?: Record<string, unknown>; children?: SchemaNode[] };

function index(nodes: SchemaNode[], into = new Map<string, Set<string>>()) {
  for (const node of nodes) {
    into.set(node.path, new Set(Object.keys(node.info ?? {})));
    if (node.children) index(node.children, into);
  }
  return into;
}

describe("the Proxmox client", () => {
  it("sends only requests that exist in Proxmox's published API schema", () => {
    const schemaFile = path.resolve(
      import.meta.dirname,
      "../../../shared/reference/pve-api-schema.json",
    );
    const paths = index(JSON.parse(fs.readFileSync(schemaFile, "utf8")) as SchemaNode[]);
    for (const request of PROXMOX_REQUESTS) {
      const [method, template] = request.split(" ") as [string, string];
      expect(paths.get(template), `${request} is not in the schema`).toBeDefined();
      expect([...paths.get(template)!]).toContain(method);
    }
  });
});
