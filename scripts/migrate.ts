/**
 * `npm run db:migrate`: applies the console's migrations and graphile-worker's to DATABASE_URL,
 * and nothing else. For installs where the database is not the embedded one and migrations are
 * their own step (deploy/systemd/clupilot-migrate.service); `npm start` applies them itself.
 * Safe to run from several machines at once (lib/db/migrate.ts serialises them).
 */
import { databaseUrl } from "../lib/db/client";
import { migrateDatabase } from "../lib/db/migrate";

async function main() {
  const url = databaseUrl();
  console.log("[migrate] applying migrations");
  await migrateDatabase(url);
  console.log("[migrate] the database is up to date");
}

main().catch((error: Error) => {
  console.error(`[migrate] failed: ${error.message}`);
  process.exit(1);
});
