import type { z } from "zod";
import { requestActor, type Actor } from "@/lib/auth/actor";
import { AppError } from "@/lib/errors";
import { searchParamsInput } from "@/lib/http/query-params";
import type { Role } from "@/lib/roles";
import { parseInput } from "./parse-input";
import { parseId, respondError } from "./respond";

export const ROUTE_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;
export type RouteMethod = (typeof ROUTE_METHODS)[number];

/**
 * A route's method and file path, as the server log and the API document name it:
 * "POST /api/hosts/[hostId]/runs". The test of the API document checks it against the file.
 */
export type RouteName = `${RouteMethod} /api/${string}`;

/**
 * How a refused input's field errors are keyed. `path`: each field by its full path
 * (`source.host`), an error of the whole input under `input`. `field`: by the top-level field
 * only, errors of the whole input left unnamed — the form the older routes have always answered,
 * kept so their callers see the same keys.
 */
export type ErrorKeys = "path" | "field";

/** Path parameters that are ids, each with its schema: a malformed one is a 400 naming it. */
type IdParams = Record<string, z.ZodType<string>>;

type QuerySpec = {
  schema: z.ZodType;
  /** The query string as the schema's input; by default the schema's own keys (the last of a repeated one). */
  read?: (params: URLSearchParams) => unknown;
};

type BodySpec = {
  schema: z.ZodType;
  /**
   * `object` (the default): the body must be a JSON object of fields. `json`: any JSON value, the
   * schema decides. `none`: no body is read; the schema parses only what `fromPath` brings.
   */
  read?: "object" | "json" | "none";
  /** An empty body stands for `{}`: a request that takes no options may send nothing. */
  optional?: boolean;
  /**
   * Path parameters the schema reads as fields of the input, by the schema's name for them:
   * `{ targetId: "id" }`. They are checked with the body, so their errors come under that name.
   */
  fromPath?: Record<string, string>;
};

export type RouteSpec = {
  role: Role;
  /** One line for the API document: what the route does. */
  summary: string;
  params?: IdParams;
  query?: QuerySpec;
  body?: BodySpec;
  errorKeys?: ErrorKeys;
};

/** What the API document needs to know of a route: everything it checks, nothing it does. */
export type RouteDefinition = RouteSpec & { method: RouteMethod; path: string; name: RouteName };

type Output<S> = S extends { schema: infer Z extends z.ZodType } ? z.output<Z> : undefined;

export type RouteInput<S extends RouteSpec> = {
  request: Request;
  actor: Actor;
  params: { [K in keyof S["params"]]: string };
  query: Output<S["query"]>;
  body: Output<S["body"]>;
};

/** The second argument Next.js passes a handler: the dynamic segments of its path. */
export type RouteContext = { params: Promise<Record<string, string>> };

export type RouteHandler = ((request: Request, context?: RouteContext) => Promise<Response>) & {
  readonly definition: RouteDefinition;
};

/**
 * A JSON API route: the role it needs, the schemas of its input, and the call into lib/ that
 * answers it. The frame every route shares, in this order: the role is checked before any
 * input is read (a caller without it gets 401/403 and learns nothing about its input); the ids
 * in the path, the query and the body are each checked by their schema (bad input is a 400 with
 * field errors, before Postgres sees it); anything the handler throws becomes the mapped error
 * answer `{ error, fieldErrors }`, logged under `name`. The returned handler carries its
 * definition, from which the API document (/api/openapi.json) is built: a route cannot exist
 * without its entry there.
 */
export function route<const S extends RouteSpec>(
  name: RouteName,
  spec: S,
  handle: (input: RouteInput<S>) => Promise<Response>,
): RouteHandler {
  const [method, path] = name.split(" ") as [RouteMethod, string];
  const handler = async (request: Request, context?: RouteContext): Promise<Response> => {
    try {
      const actor = await requestActor(request, spec.role);
      const path = (await context?.params) ?? {};
      const params: Record<string, string> = {};
      for (const [param, schema] of Object.entries(spec.params ?? {})) {
        params[param] = parseId(schema, path[param], param);
      }
      const errorKeys = spec.errorKeys ?? "path";
      const query = spec.query
        ? parse(spec.query.schema, readQuery(spec.query, request), errorKeys)
        : undefined;
      const body = spec.body
        ? parse(spec.body.schema, await readBody(spec.body, request, path), errorKeys)
        : undefined;
      return await handle({ request, actor, params, query, body } as RouteInput<S>);
    } catch (error) {
      return respondError(error, name);
    }
  };
  return Object.assign(handler, { definition: { ...spec, method, path, name } });
}

function parse(schema: z.ZodType, value: unknown, keys: ErrorKeys): unknown {
  // A thrown ZodError is answered with its top-level fields (lib/api/respond.ts).
  return keys === "path" ? parseInput(schema, value) : schema.parse(value);
}

/** The top-level keys of an object schema (also one with refinements). */
export function schemaKeys(schema: z.ZodType): string[] {
  const shape = (schema as { shape?: Record<string, unknown> }).shape;
  return shape ? Object.keys(shape) : [];
}

function readQuery(spec: QuerySpec, request: Request): unknown {
  const params = new URL(request.url).searchParams;
  return spec.read ? spec.read(params) : searchParamsInput(params, schemaKeys(spec.schema));
}

const NOT_JSON = "The request body is not valid JSON.";
const NOT_AN_OBJECT = "The request body must be a JSON object of the fields to change.";

async function readBody(
  spec: BodySpec,
  request: Request,
  path: Record<string, string>,
): Promise<unknown> {
  const read = spec.read ?? "object";
  let body: unknown = {};
  if (read !== "none") {
    const text = await request.text();
    if (!(spec.optional && text.trim() === "")) {
      try {
        body = JSON.parse(text);
      } catch {
        throw new AppError("invalid_input", NOT_JSON);
      }
    }
    // Anything else — an array, a string, null — is bad input, not an empty change that
    // quietly succeeds.
    if (read === "object" && !isObject(body)) throw new AppError("invalid_input", NOT_AN_OBJECT);
  }
  if (!spec.fromPath) return body;
  // A body that is no object then fails on every field the schema needs: a 400.
  const fields: Record<string, unknown> = isObject(body) ? { ...body } : {};
  for (const [param, field] of Object.entries(spec.fromPath)) fields[field] = path[param];
  return fields;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
