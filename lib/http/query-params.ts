import { z } from "zod";

/*
 * Pieces of the filters the pages and the JSON API share (a page's search params and a route's
 * query string are read by the same zod schema).
 */

/** A query-string or form value left empty means "no filter", not "match the empty string". */
export const blankToUndefined = (value: unknown) =>
  typeof value === "string" && value.trim() === "" ? undefined : value;

/**
 * A point in time for a range filter. The pages' `datetime-local` inputs send no offset; those
 * are read as UTC (the pages say so), so a URL means the same thing in every browser.
 */
export const optionalInstant = z.preprocess(
  blankToUndefined,
  z.iso
    .datetime({
      local: true,
      offset: true,
      error: "Enter a date and time like 2026-11-30T05:30 (UTC) or with an offset.",
    })
    .transform((text) => new Date(/[zZ]|[+-]\d\d:?\d\d$/.test(text) ? text : `${text}Z`))
    .optional(),
);

/** The named keys of URL search params as a plain object for zod (a repeated key: the last). */
export function searchParamsInput(
  params: URLSearchParams,
  keys: readonly string[],
): Record<string, string> {
  const input: Record<string, string> = {};
  for (const key of keys) {
    const values = params.getAll(key);
    if (values.length > 0) input[key] = values.at(-1)!;
  }
  return input;
}
