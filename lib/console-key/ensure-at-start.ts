import { createDb } from "@/lib/db/client";

import { ensureConsoleKey } from "@/lib/host-access/console-key-store";

/**
 * `npm start` creates the console's key right after the migrations, so the first add-host form
 * already shows it. (Pages, the API and host creation also call ensureConsoleKey: a console run
 * another way, or a test database, gets its key on first use.)
 */
export async function ensureConsoleKeyAt(connectionString: string): Promise<string> {
  const { pool, db } = createDb(connectionString, 1);
  try {
    return (await ensureConsoleKey(db)).fingerprint;
  } finally {
    await pool.end();
  }
}
