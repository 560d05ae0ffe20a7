import { z } from "zod";
import type { HostState } from "./host-state";

/**
 * The fleet view's query: what `GET /api/hosts` and the hosts page's URL accept. One schema for
 * both, so a link copied from the browser and an API call mean the same thing.
 */

/** Every host state, in the order the fleet view shows them (what needs a look first). */
export const HOST_STATES = [
  "failed",
  "aborted",
  "onboarding",
  "decommissioning",
  "active",
  "retired",
] as const satisfies readonly HostState[];
// A state added to HostState (e.g. by the lifecycle work) must be added here too, or this fails
// to compile: counts and filters silently missing a state would hide hosts from the operator.
const everyStateListed: Exclude<HostState, (typeof HOST_STATES)[number]> extends never
  ? true
  : never = true;
void everyStateListed;

export const FLEET_SORTS = ["name", "state", "updated", "address"] as const;
export type FleetSort = (typeof FLEET_SORTS)[number];

export const SEARCH_MAX_LENGTH = 100;
export const PAGE_SIZE_DEFAULT = 50;
export const PAGE_SIZE_MAX = 200;

/** A query parameter that may repeat (`state=a&state=b`) or list values (`state=a,b`). */
const multi = <T extends z.ZodType>(item: T) =>
  z.preprocess((value) => {
    if (value === undefined || value === null || value === "") return [];
    const list = Array.isArray(value) ? value : [value];
    return list
      .flatMap((v) => (typeof v === "string" ? v.split(",") : [v]))
      .filter((v) => v !== "");
  }, z.array(item));

const flag = z.preprocess(
  (value) => (value === undefined || value === "" ? undefined : value),
  z
    .enum(["1", "0", "true", "false"], { error: "Use 1 or 0." })
    .optional()
    .transform((value) => value === "1" || value === "true"),
);

export const ZFleetQuery = z.object({
  /** Case-insensitive substring of the host's name, address or Proxmox node name. */
  q: z
    .string()
    .trim()
    .max(SEARCH_MAX_LENGTH, `Search for at most ${SEARCH_MAX_LENGTH} characters.`)
    .default(""),
  state: multi(
    z.enum(HOST_STATES, { error: `A state is one of ${HOST_STATES.join(", ")}.` }),
  ).transform((states) => [...new Set(states)]),
  /** Hosts whose latest run failed at this step (a step name, e.g. InstallProxmoxVe). */
  failedStep: z
    .string()
    .trim()
    .max(100, "A step name has at most 100 characters.")
    .regex(/^[A-Za-z0-9_-]*$/, "A step name is letters and digits, like InstallProxmoxVe.")
    .default(""),
  /** Only hosts that need attention (lib/hosts/needs-attention.ts). */
  attention: flag,
  /** Only members of this Proxmox cluster (the name onboarding created, joined or read back). */
  cluster: z
    .string()
    .trim()
    .max(15, "A cluster name has at most 15 characters.")
    .regex(
      /^([a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)?$/,
      "A cluster name is letters, digits and inner hyphens.",
    )
    .default(""),
  sort: z.enum(FLEET_SORTS, { error: `Sort by one of ${FLEET_SORTS.join(", ")}.` }).default("name"),
  /** Default: newest first for `updated`, A→Z (or failed first) for the others. */
  dir: z.enum(["asc", "desc"], { error: "Direction is asc or desc." }).optional(),
  page: z.coerce
    .number({ error: "A page is a number." })
    .int("A page is a whole number.")
    .min(1, "Pages start at 1.")
    .max(100_000, "No fleet has that many pages.")
    .default(1),
  limit: z.coerce
    .number({ error: "A page size is a number." })
    .int("A page size is a whole number.")
    .min(1, "Show at least 1 host per page.")
    .max(PAGE_SIZE_MAX, `Show at most ${PAGE_SIZE_MAX} hosts per page.`)
    .default(PAGE_SIZE_DEFAULT),
});

export type FleetQuery = z.output<typeof ZFleetQuery>;
export type FleetQueryInput = z.input<typeof ZFleetQuery>;

/** The sort direction in effect when `dir` is not given. */
export function effectiveDir(query: Pick<FleetQuery, "sort" | "dir">): "asc" | "desc" {
  return query.dir ?? (query.sort === "updated" ? "desc" : "asc");
}

const KEYS = [
  "q",
  "state",
  "failedStep",
  "attention",
  "cluster",
  "sort",
  "dir",
  "page",
  "limit",
] as const;

/** URL search parameters → the raw object ZFleetQuery parses (repeated keys become arrays). */
export function fleetParamsObject(params: URLSearchParams): Record<string, string | string[]> {
  const raw: Record<string, string | string[]> = {};
  for (const key of KEYS) {
    const values = params.getAll(key);
    if (values.length === 0) continue;
    raw[key] = key === "state" ? values : values[values.length - 1]!;
  }
  return raw;
}

/** The query as URL parameters, defaults left out so links stay short and readable. */
export function fleetQueryToParams(query: FleetQuery): URLSearchParams {
  const params = new URLSearchParams();
  if (query.q) params.set("q", query.q);
  if (query.state.length > 0) params.set("state", query.state.join(","));
  if (query.failedStep) params.set("failedStep", query.failedStep);
  if (query.attention) params.set("attention", "1");
  if (query.cluster) params.set("cluster", query.cluster);
  if (query.sort !== "name") params.set("sort", query.sort);
  if (query.dir) params.set("dir", query.dir);
  if (query.page !== 1) params.set("page", String(query.page));
  if (query.limit !== PAGE_SIZE_DEFAULT) params.set("limit", String(query.limit));
  return params;
}

/** The default view: every host, by name, first page. */
export const DEFAULT_FLEET_QUERY: FleetQuery = ZFleetQuery.parse({});
