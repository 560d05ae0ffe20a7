import { createDb } from "@/lib/db/client";
import { issueSetupToken } from "./setup";

/**
 * For `npm start`: a fresh one-time setup token when the console has no user yet, else null.
 * Uses its own short-lived connection: the start script holds no pool of its own.
 */
export async function issueFirstStartSetupToken(databaseUrl: string): Promise<string | null> {
  const { pool, db } = createDb(databaseUrl, 1);
  try {
    return await issueSetupToken(db);
  } finally {
    await pool.end();
  }
}
