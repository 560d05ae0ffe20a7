import { getTableName, is } from "drizzle-orm";
import { getTableConfig, PgTable } from "drizzle-orm/pg-core";
import * as schema from "@/lib/db/schema";

/** A column holding lib/secrets envelopes, and how to address its rows. */
export type SealedColumn = { table: string; primaryKey: string; column: string };

/**
 * Every sealed column in the schema, found by the naming rule every sealed column follows: its
 * database name starts with `sealed` (`credentials.sealed`, `console_keys.sealed_private_key`).
 * Found, not listed, so a rotation cannot forget a sealed column added later.
 */
export function sealedColumns(): SealedColumn[] {
  const found: SealedColumn[] = [];
  for (const table of Object.values(schema)) {
    if (!is(table, PgTable)) continue;
    const config = getTableConfig(table);
    const sealed = config.columns.filter((column) => column.name.startsWith("sealed"));
    if (sealed.length === 0) continue;
    const keys = config.columns.filter((column) => column.primary);
    if (keys.length !== 1) {
      throw new Error(
        `${getTableName(table)} holds sealed secrets but has no single-column primary key; ` +
          `secrets rotation addresses rows by it.`,
      );
    }
    for (const column of sealed) {
      found.push({ table: config.name, primaryKey: keys[0]!.name, column: column.name });
    }
  }
  return found.sort((a, b) => `${a.table}.${a.column}`.localeCompare(`${b.table}.${b.column}`));
}
