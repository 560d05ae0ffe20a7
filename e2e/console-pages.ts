import fs from "node:fs";
import path from "node:path";

const appDir = path.resolve(import.meta.dirname, "../app");

/**
 * Every page of the app as a URL path, found from `app/**​/page.tsx` (so a new page is covered
 * without editing the specs that crawl them): route groups `(…)` dropped, `[param]` filled from
 * `ids` (a page whose parameter has no id is reported, not silently skipped).
 */
export function consolePages(ids: Record<string, string>): string[] {
  return fs
    .readdirSync(appDir, { recursive: true, encoding: "utf8" })
    .filter((file) => path.basename(file) === "page.tsx")
    .map((file) =>
      path
        .dirname(file)
        .split(path.sep)
        .filter((segment) => segment !== "." && !/^\(.*\)$/.test(segment))
        .map((segment) => {
          const param = /^\[(.+)\]$/.exec(segment)?.[1];
          if (!param) return segment;
          const id = ids[param];
          if (!id) throw new Error(`No id for [${param}] of page ${file}: add one to the crawl.`);
          return encodeURIComponent(id);
        })
        .join("/"),
    )
    .map((route) => `/${route}`)
    .sort();
}

/** Every route handler with a GET, as a URL path with its `[param]`s filled from `ids`. */
export function apiGetRoutes(ids: Record<string, string>): string[] {
  const apiDir = path.join(appDir, "api");
  return fs
    .readdirSync(apiDir, { recursive: true, encoding: "utf8" })
    .filter((file) => path.basename(file) === "route.ts")
    .filter((file) =>
      // A handler function, or the route wrapper's `export const GET = route(…)`.
      /export\s+((async\s+)?function|const)\s+GET\b/.test(
        fs.readFileSync(path.join(apiDir, file), "utf8"),
      ),
    )
    .map((file) => {
      const route = path
        .dirname(file)
        .split(path.sep)
        .filter((segment) => segment !== ".")
        .map((segment) => {
          const param = /^\[(.+)\]$/.exec(segment)?.[1];
          if (!param) return segment;
          const id = ids[param];
          if (!id) throw new Error(`No id for [${param}] of ${file}: add one to the crawl.`);
          return encodeURIComponent(id);
        })
        .join("/");
      return `/api/${route}`.replace(/\/$/, "");
    })
    .sort();
}
