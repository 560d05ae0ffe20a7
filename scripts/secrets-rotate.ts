/**
 * `npm run secrets:rotate`: re-seals every stored secret under a new key (lib/secrets/rotate.ts).
 * A new key is generated, or taken from CLUPILOT_NEW_SECRET_KEY (64 hex characters or base64).
 * Safe while the console runs, and safe to run again after an interruption.
 */
import os from "node:os";
import { openConsoleDatabase } from "../lib/auth/cli-database";
import { createDb } from "../lib/db/client";
import { AppError } from "../lib/errors";
import { safeErrorSummary } from "../lib/api/respond";
import { parseSecretKey } from "../lib/secrets/key";
import { rotateSecrets } from "../lib/secrets/rotate";

async function main(): Promise<number> {
  const newKeyText = process.env.CLUPILOT_NEW_SECRET_KEY;
  const newKey = newKeyText ? parseSecretKey(newKeyText, "CLUPILOT_NEW_SECRET_KEY") : undefined;
  const database = await openConsoleDatabase((line) => console.log(line));
  const { pool, db } = createDb(database.url, 2);
  try {
    const report = await rotateSecrets(db, {
      newKey,
      actor: { userId: null, name: `${os.userInfo().username} (npm run secrets:rotate)` },
    });
    const total = Object.values(report.resealed).reduce((sum, count) => sum + count, 0);
    console.log(`Re-sealed ${total} secret(s) with key ${report.toKeyId} in one transaction:`);
    for (const [column, count] of Object.entries(report.resealed)) {
      console.log(`  ${column}: ${count}`);
    }
    if (report.swept > 0) {
      console.log(`  plus ${report.swept} sealed by the running console meanwhile`);
    }
    console.log(`Checked: all ${report.verified} stored secret(s) open with the new key alone.`);
    if (report.mode === "key-file") {
      console.log(
        `The console's key file now holds key ${report.toKeyId}. A running console picks it up by ` +
          `itself (it re-reads the key file when it changes); no restart is needed.\n` +
          `The old key is kept in ${report.retiredKeyFile} (mode 0600). Remove it once no ` +
          `database backup made before now is needed: those backups open only with it.`,
      );
    } else {
      console.log(
        `Every secret is under CLUPILOT_SECRET_KEY (${report.toKeyId}). Remove ` +
          `CLUPILOT_PREVIOUS_SECRET_KEYS and restart the console's web server and worker; keep the ` +
          `old key as long as you keep database backups made before now.`,
      );
    }
    return 0;
  } catch (error) {
    console.error(
      error instanceof AppError
        ? error.message
        : `Rotation failed: ${safeErrorSummary(error)}. Every secret is still readable with the ` +
            `keys in place; run the command again.`,
    );
    return 1;
  } finally {
    await pool.end();
    await database.release();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  },
);
