import { inputObject } from "@/lib/actions/action-result";
import { AppError } from "@/lib/errors";

/*
 * The power forms post flat fields named by their path in the domain's input (`source.host`,
 * `triggers.chargeBelowPercent`), so a field error comes back under the very control that
 * caused it. This turns such a form into the nested input the domain schemas parse. Plain
 * objects (the JSON-shaped calls the pages make) pass through untouched.
 */

/** Text fields whose emptiness means "none" (null), whatever an empty number means. */
const NONE_WHEN_EMPTY = /^(shutdown\.consoleGuest\.node|consolidate\.remainingNode|shed\.guests)$/;
/** Fields holding numbers; `off` turns a threshold off (null). */
const NUMERIC =
  /^(triggers|triggerOverrides|shutdown|powerBack|consolidate\.firstThreshold)\.|^(pollIntervalMs|stage|port|source\.port|shed\.afterMinutes)$/;
/** Fields holding yes/no (a checkbox sends `on`, a select `true`/`false`). */
const BOOLEAN =
  /(^|\.)(lowBattery|forcedShutdownAlone|runsConsole|enabled|confirmPlanChange|confirmDuringOutage|outputCycle)$/;
/** Fields a form may repeat (checkboxes), kept as lists. */
const LISTS = new Set(["feeds", "confirmedTargetIds"]);

export type BlankMeans = "omit" | "null";

function convert(key: string, value: string, blank: BlankMeans): unknown {
  if (NONE_WHEN_EMPTY.test(key)) return value.trim() === "" ? null : value.trim();
  if (value.trim() === "") return blank === "null" && NUMERIC.test(key) ? null : undefined;
  if (BOOLEAN.test(key)) {
    if (value === "on" || value === "true") return true;
    if (value === "false") return false;
    return value;
  }
  if (NUMERIC.test(key)) {
    if (value.trim().toLowerCase() === "off") return null;
    const number = Number(value);
    return Number.isFinite(number) ? number : value;
  }
  return value;
}

/**
 * The nested input of a power form. `blank` says what an empty numeric field means: `omit` (a
 * per-UPS override left empty follows the default) or `null` (a global threshold left empty is
 * off). Any other empty field is left out, so an empty secret keeps the stored one.
 */
export function powerFormInput(
  input: FormData | Record<string, unknown>,
  blank: BlankMeans = "omit",
): Record<string, unknown> {
  if (!(input instanceof FormData)) {
    // Whatever reaches a server action is the caller's to choose, not necessarily an object.
    const value: unknown = input;
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw new AppError("invalid_input", "Send the form's fields; this was not a form.");
    }
    return input;
  }
  const nested: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(inputObject(input))) {
    if (LISTS.has(key) || typeof value !== "string") continue;
    const converted = convert(key, value, blank);
    if (converted === undefined) continue;
    const path = key.split(".");
    let node = nested;
    for (const part of path.slice(0, -1)) {
      const next = node[part];
      node = (typeof next === "object" && next !== null ? next : (node[part] = {})) as Record<
        string,
        unknown
      >;
    }
    node[path.at(-1)!] = converted;
  }
  for (const key of LISTS) {
    if (input.has(key)) nested[key] = input.getAll(key).filter((v) => typeof v === "string");
  }
  return nested;
}
