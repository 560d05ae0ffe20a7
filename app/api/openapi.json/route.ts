import { openApiDocument, routeHandlers } from "@/lib/api/openapi";
import packageJson from "@/package.json";
import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { API_ROUTE_MODULES } from "./routes";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

let document: ReturnType<typeof openApiDocument> | undefined;

/**
 * The JSON API's OpenAPI 3.1 document, built from the schemas the routes validate with
 * (lib/api/openapi.ts). Like every route here it needs a credential (a session or an API
 * token, any role): it tells the shapes, not secrets, but the console answers nobody anonymous.
 */
export const GET = route(
  "GET /api/openapi.json",
  { role: "viewer", summary: "This document: the JSON API described in OpenAPI 3.1" },
  async () => {
    // Built once per process: the routes are fixed at build time.
    document ??= openApiDocument([...routeHandlers(API_ROUTE_MODULES), GET], packageJson.version);
    return json(document);
  },
);
