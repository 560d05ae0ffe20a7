import { sql } from "drizzle-orm";

/** A `text[]` literal of bound parameters (drizzle binds a JS array as a list, not an array). */
export function textArray(values: readonly string[]) {
  return sql`array[${sql.join(
    values.map((value) => sql`${value}`),
    sql`, `,
  )}]::text[]`;
}
