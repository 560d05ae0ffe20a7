import { z } from "zod";
import { SESSION_COOKIE } from "@/lib/auth/session-cookie";
import { ZErrorAnswer } from "./respond";
import { ROUTE_METHODS, type RouteDefinition, type RouteHandler } from "./route";

/*
 * The JSON API's OpenAPI 3.1 document, built from the definitions the route wrapper
 * (./route.ts) attaches to every handler: the same zod schemas the routes validate with, turned
 * into JSON Schema by zod itself (`z.toJSONSchema`, draft 2020-12, which OpenAPI 3.1 takes as
 * is). Nothing here restates a schema by hand.
 */

type JsonSchema = Record<string, unknown>;
type Operation = Record<string, unknown>;

/** A schema as a caller sends it: the input side of transforms, defaults and coercions. */
export function inputJsonSchema(schema: z.ZodType): JsonSchema {
  // Refinements and transforms that JSON Schema cannot say are left open ({}): the route's
  // answer (400 with field errors) is the last word.
  const { $schema: _, ...json } = z.toJSONSchema(schema, {
    io: "input",
    unrepresentable: "any",
  }) as JsonSchema;
  return json;
}

/** `/api/hosts/[hostId]` → `/api/hosts/{hostId}` */
export function openApiPath(path: string): string {
  return path.replace(/\[([^\]]+)\]/g, "{$1}");
}

/** Each module's handlers (`GET`, `POST`, …) that the route wrapper made. */
export function routeHandlers(modules: readonly Record<string, unknown>[]): RouteHandler[] {
  return modules.flatMap((routeModule) =>
    ROUTE_METHODS.map((method) => routeModule[method]).filter(
      (handler): handler is RouteHandler =>
        typeof handler === "function" && "definition" in handler,
    ),
  );
}

/** `version`: the console's own (package.json's), handed in by the route: lib/ reads no file above it. */
export function openApiDocument(handlers: readonly RouteHandler[], version: string) {
  const paths: Record<string, Record<string, Operation>> = {};
  for (const { definition } of handlers) {
    (paths[openApiPath(definition.path)] ??= {})[definition.method.toLowerCase()] =
      operation(definition);
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "CluPilot console API",
      version,
      description:
        "The console's JSON API: the same operations as its pages, with the same checks. " +
        "Errors answer `{ error, fieldErrors }`: `error` says what happened and what to do, " +
        "`fieldErrors` names each refused field. See docs/operations.md, “The JSON API”.",
    },
    security: [{ apiToken: [] }, { sessionCookie: [] }],
    components: {
      securitySchemes: {
        apiToken: {
          type: "http",
          scheme: "bearer",
          description:
            "A personal API token (clp_…) from the account page or POST /api/tokens; it acts with its owner's role.",
        },
        sessionCookie: { type: "apiKey", in: "cookie", name: SESSION_COOKIE },
      },
      schemas: { Error: inputJsonSchema(ZErrorAnswer) },
    },
    paths: Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b))),
  };
}

const ERROR = {
  content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
};

function operation(route: RouteDefinition): Operation {
  const body = route.body ? inputJsonSchema(route.body.schema) : null;
  const fromPath = route.body?.fromPath ?? {};
  const parameters = [
    ...Object.entries(route.params ?? {}).map(([name, schema]) => ({
      name,
      in: "path",
      required: true,
      schema: inputJsonSchema(schema),
    })),
    // Path parameters the body's schema reads as its own fields: documented with that field.
    ...Object.entries(fromPath)
      .filter(([name]) => !route.params?.[name])
      .map(([name, field]) => ({
        name,
        in: "path",
        required: true,
        schema: (body && propertyOf(body, field)) ?? { type: "string" },
      })),
    ...queryParameters(route),
  ];
  const requestBody =
    body && route.body?.read !== "none"
      ? {
          required: !route.body?.optional,
          content: { "application/json": { schema: withoutFields(body, Object.values(fromPath)) } },
        }
      : undefined;
  const hasInput = parameters.length > 0 || requestBody !== undefined;
  return {
    operationId: operationId(route),
    tags: [route.path.split("/")[2]],
    summary: route.summary,
    description: `Needs the ${route.role} role (viewer < operator < admin).`,
    "x-required-role": route.role,
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(requestBody ? { requestBody } : {}),
    responses: {
      "2XX": { description: "Done." },
      ...(hasInput
        ? { "400": { description: "Bad input: `fieldErrors` names each refused field.", ...ERROR } }
        : {}),
      "401": { description: "Not signed in, or the API token is not valid.", ...ERROR },
      "403": {
        description: "The role is too low, or the request came from another site's page.",
        ...ERROR,
      },
      default: { description: "The operation was refused or failed; `error` says why.", ...ERROR },
    },
  };
}

function queryParameters(route: RouteDefinition) {
  if (!route.query) return [];
  const json = inputJsonSchema(route.query.schema);
  const properties = (json.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((json.required ?? []) as string[]);
  return Object.entries(properties).map(([name, schema]) => ({
    name,
    in: "query",
    required: required.has(name),
    schema,
  }));
}

/** "POST /api/hosts/[hostId]/runs" → "postHostsHostIdRuns" */
function operationId(route: RouteDefinition): string {
  const words = route.path
    .split(/[^A-Za-z0-9]+/)
    .filter((word) => word && word !== "api")
    .map((word) => word[0]!.toUpperCase() + word.slice(1));
  return route.method.toLowerCase() + words.join("");
}

/** The branches of a JSON schema an object's fields can stand in. */
function branches(schema: JsonSchema): JsonSchema[] {
  const nested = ["allOf", "anyOf", "oneOf"].flatMap(
    (key) => (schema[key] as JsonSchema[] | undefined) ?? [],
  );
  return [schema, ...nested.flatMap(branches)];
}

function propertyOf(schema: JsonSchema, field: string): JsonSchema | undefined {
  for (const branch of branches(schema)) {
    const found = (branch.properties as Record<string, JsonSchema> | undefined)?.[field];
    if (found) return found;
  }
  return undefined;
}

/** The schema without the fields the path carries: a caller does not send them in the body. */
function withoutFields(schema: JsonSchema, fields: readonly string[]): JsonSchema {
  if (fields.length === 0) return schema;
  const copy: JsonSchema = { ...schema };
  if (copy.properties) {
    copy.properties = Object.fromEntries(
      Object.entries(copy.properties as JsonSchema).filter(([key]) => !fields.includes(key)),
    );
  }
  if (Array.isArray(copy.required)) {
    copy.required = (copy.required as string[]).filter((key) => !fields.includes(key));
  }
  for (const key of ["allOf", "anyOf", "oneOf"]) {
    if (Array.isArray(copy[key])) {
      copy[key] = (copy[key] as JsonSchema[]).map((branch) => withoutFields(branch, fields));
    }
  }
  return copy;
}
