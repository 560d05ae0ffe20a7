import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { inputJsonSchema, openApiDocument, openApiPath, routeHandlers } from "@/lib/api/openapi";
import type { RouteHandler } from "@/lib/api/route";
import { GET as documentRoute } from "./route";
import { API_ROUTE_MODULES } from "./routes";

/*
 * The API document lists every route file under app/api with each method it exports, built
 * from the very definition the handler validates with: found by walking the folder, so a route
 * added without its entry fails here.
 */

const apiDir = path.resolve(import.meta.dirname, "..");
const HTTP_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

const routeFiles = (fs.readdirSync(apiDir, { recursive: true, encoding: "utf8" }) as string[])
  .filter((file) => path.basename(file) === "route.ts")
  .sort();

const exported = await Promise.all(
  routeFiles.map(async (file) => {
    const routeModule = (await import(path.join(apiDir, file))) as Record<string, unknown>;
    const urlPath = `/api/${path.dirname(file).split(path.sep).join("/")}`;
    const methods = Object.keys(routeModule).filter((name) => HTTP_METHODS.includes(name));
    return { file, routeModule, urlPath, methods };
  }),
);

const document = openApiDocument([...routeHandlers(API_ROUTE_MODULES), documentRoute], "test");
type Operation = {
  parameters?: { name: string; in: string; required: boolean; schema: unknown }[];
  requestBody?: { content: { "application/json": { schema: Record<string, unknown> } } };
};
const operationOf = (urlPath: string, method: string) =>
  (document.paths[openApiPath(urlPath)] as Record<string, Operation> | undefined)?.[
    method.toLowerCase()
  ];

describe("the API document", () => {
  it("walks every route file (and the manifest lists each but the document's own)", () => {
    expect(routeFiles.length).toBeGreaterThanOrEqual(52);
    expect(API_ROUTE_MODULES).toHaveLength(routeFiles.length - 1);
    for (const { routeModule, file } of exported) {
      if (file.startsWith("openapi.json")) continue;
      expect(API_ROUTE_MODULES, file).toContain(routeModule);
    }
  });

  it("has each file's methods at its path, each made by the route wrapper under its own name", () => {
    for (const { file, routeModule, urlPath, methods } of exported) {
      expect(methods.length, file).toBeGreaterThan(0);
      for (const method of methods) {
        const { definition } = routeModule[method] as RouteHandler;
        expect(definition, `${method} ${file}`).toBeDefined();
        expect(definition.name).toBe(`${method} ${urlPath}`);
        expect(operationOf(urlPath, method), `${method} ${urlPath}`).toBeDefined();
      }
    }
    const documented = Object.values(document.paths).flatMap((item) => Object.keys(item));
    expect(documented).toHaveLength(exported.flatMap((route) => route.methods).length);
  });

  it("describes each input with the schema the handler parses, path parameters included", () => {
    for (const { routeModule, urlPath, methods } of exported) {
      for (const method of methods) {
        const { definition } = routeModule[method] as RouteHandler;
        const operation = operationOf(urlPath, method)!;
        const inPath = [...urlPath.matchAll(/\[([^\]]+)\]/g)].map((match) => match[1]);
        const pathParameters = (operation.parameters ?? []).filter((p) => p.in === "path");
        expect(pathParameters.map((p) => p.name).sort(), `${method} ${urlPath}`).toEqual(
          inPath.sort(),
        );
        for (const [name, schema] of Object.entries(definition.params ?? {})) {
          expect(pathParameters.find((p) => p.name === name)?.schema).toEqual(
            inputJsonSchema(schema),
          );
        }
        const query = (operation.parameters ?? []).filter((p) => p.in === "query");
        const queryProperties = definition.query
          ? Object.keys(
              (inputJsonSchema(definition.query.schema).properties as object | undefined) ?? {},
            )
          : [];
        expect(query.map((p) => p.name)).toEqual(queryProperties);
        const body = operation.requestBody?.content["application/json"].schema;
        if (!definition.body || definition.body.read === "none") {
          expect(body, `${method} ${urlPath}`).toBeUndefined();
        } else if (!definition.body.fromPath) {
          expect(body, `${method} ${urlPath}`).toEqual(inputJsonSchema(definition.body.schema));
        } else {
          // The body's schema less the fields the path fills in.
          const full = JSON.stringify(inputJsonSchema(definition.body.schema));
          for (const field of Object.values(definition.body.fromPath)) {
            expect(JSON.stringify(body)).not.toContain(`"${field}":`);
            expect(full).toContain(`"${field}":`);
          }
        }
      }
    }
  });

  it("documents a known body field by field", () => {
    const body = operationOf("/api/tokens", "POST")?.requestBody?.content["application/json"]
      .schema as { properties: { label: { type: string; maxLength: number } }; required: string[] };
    expect(body.required).toEqual(["label"]);
    expect(body.properties.label).toMatchObject({ type: "string", maxLength: 80 });
    // The plan's id comes from the path, not the body.
    const version = operationOf("/api/catalog/plans/[planId]/versions", "POST");
    expect(version?.parameters).toEqual([
      expect.objectContaining({
        name: "planId",
        in: "path",
        schema: expect.objectContaining({ format: "uuid" }),
      }),
    ]);
  });
});
