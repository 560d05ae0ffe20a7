import fs from "node:fs";
import path from "node:path";
import { sql } from "drizzle-orm";
import type { AuditActor } from "@/lib/audit/record-audit";
import { recordAudit } from "@/lib/audit/record-audit";
import type { Database } from "@/lib/db/client";
import { AppError } from "@/lib/errors";
import {
  forgetSecretKey,
  generateSecretKey,
  nextSecretKeyFile,
  parseSecretKey,
  reloadKeyring,
  retiredSecretKeyFile,
  secretKeyFile,
  writeKeyFileAtomically,
  type Keyring,
  type SecretKey,
} from "./key";
import { envelopeKeyId, seal, unseal } from "./seal";
import { sealedColumns, type SealedColumn } from "./sealed-columns";
import { syncFolder } from "@/lib/config/sync-folder";

/**
 * The points between a rotation's steps. A crash at any of them leaves every secret readable:
 *
 * | after     | database sealed with | secret.key | also on disk                     |
 * | --------- | -------------------- | ---------- | -------------------------------- |
 * | staged    | old                  | old        | .next = new                      |
 * | resealed  | new (one commit)     | old        | .next = new                      |
 * | backed-up | new                  | old        | .next = new, .retired-… = old    |
 * | switched  | new                  | new        | .retired-… = old                 |
 *
 * Every process opens envelopes with all of these files (lib/secrets/key.ts), and running the
 * command again resumes with the staged key.
 */
export type RotationStep = "staged" | "resealed" | "backed-up" | "switched" | "swept";

export type RotationReport = {
  mode: "key-file" | "environment";
  fromKeyIds: string[];
  toKeyId: string;
  /** Envelopes re-sealed in the one rotation transaction, per `table.column`. */
  resealed: Record<string, number>;
  /** Envelopes sealed with an old key by a running console during the rotation, re-sealed after. */
  swept: number;
  /** Envelopes now in the database, every one opened with the new key alone. */
  verified: number;
  /** The old key, kept (mode 0600) until the user removes it; null in environment mode. */
  retiredKeyFile: string | null;
};

export type RotationOptions = {
  /** The key to rotate to (key-file mode); generated when absent. */
  newKey?: SecretKey;
  actor: AuditActor;
  now?: Date;
  /** Called after each step: tests stop the rotation there to prove a crash loses nothing. */
  afterStep?: (step: RotationStep) => void | Promise<void>;
  /** Pause before the last look for envelopes a running console sealed with the old key. */
  settleMs?: number;
};

/**
 * `npm run secrets:rotate`: re-seals every sealed column under a new key in ONE transaction,
 * then makes the new key the console's key. With `CLUPILOT_SECRET_KEY` the key lives in the
 * environment, which this command cannot change: the user switches it (old key into
 * `CLUPILOT_PREVIOUS_SECRET_KEYS`) and restarts first; the command then re-seals every envelope
 * not yet under the current key. Audited as `secrets.rotate`.
 */
export async function rotateSecrets(
  db: Database,
  options: RotationOptions,
): Promise<RotationReport> {
  const environmentMode = Boolean(process.env.CLUPILOT_SECRET_KEY);
  try {
    const report = environmentMode
      ? await resealToEnvironmentKey(db, options)
      : await rotateKeyFile(db, options);
    await recordAudit(db, {
      actor: options.actor,
      action: "secrets.rotate",
      target: `secret-key:${report.toKeyId}`,
      outcome: "success",
      detail: {
        mode: report.mode,
        from: report.fromKeyIds,
        resealed: report.resealed,
        swept: report.swept,
      },
    });
    return report;
  } catch (error) {
    await recordAudit(db, {
      actor: options.actor,
      action: "secrets.rotate",
      target: null,
      outcome: "failure",
      detail: { reason: error instanceof AppError ? error.message : "unexpected error" },
    }).catch(() => undefined);
    throw error;
  }
}

async function rotateKeyFile(db: Database, options: RotationOptions): Promise<RotationReport> {
  const now = options.now ?? new Date();
  const step = async (name: RotationStep) => options.afterStep?.(name);
  const currentFile = secretKeyFile();
  if (!fs.existsSync(currentFile)) {
    throw new AppError(
      "not_found",
      `There is no key file at ${currentFile}. Start the console once (it creates the key), ` +
        `or point CLUPILOT_DATA_DIR at the folder holding secret.key.`,
    );
  }
  const oldKey = parseSecretKey(fs.readFileSync(currentFile, "utf8"), currentFile);
  const newKey = stageNextKey(options.newKey, oldKey);
  await step("staged");

  // Every key on disk (old, staged, earlier retired ones) opens; only the new one seals.
  const opening = reloadKeyring();
  const resealed = await resealAll(db, opening, newKey);
  await step("resealed");

  const retiredKeyFile = keepRetiredKey(oldKey, now);
  await step("backed-up");

  fs.renameSync(nextSecretKeyFile(), currentFile);
  syncFolder(path.dirname(currentFile));
  forgetSecretKey();
  await step("switched");

  const swept = await sweep(db, newKey, options.settleMs ?? 1_000);
  await step("swept");
  return {
    mode: "key-file",
    fromKeyIds: [oldKey.id],
    toKeyId: newKey.id,
    resealed,
    swept,
    verified: await verifyAll(db, newKey),
    retiredKeyFile,
  };
}

/**
 * Writes the new key beside the old one before anything is sealed with it. A `.next` file left
 * by an interrupted rotation may already seal the database's secrets: it is resumed, never
 * replaced.
 */
function stageNextKey(requested: SecretKey | undefined, oldKey: SecretKey): SecretKey {
  const file = nextSecretKeyFile();
  if (fs.existsSync(file)) {
    const staged = parseSecretKey(fs.readFileSync(file, "utf8"), file);
    if (requested && requested.id !== staged.id) {
      throw new AppError(
        "conflict",
        `An interrupted rotation to key ${staged.id} is not finished (${file}). Run the command ` +
          `again without CLUPILOT_NEW_SECRET_KEY to finish it, then rotate to your key.`,
      );
    }
    return staged;
  }
  const key = requested ?? generateSecretKey();
  if (key.id === oldKey.id) {
    throw new AppError(
      "invalid_input",
      "The new key is the key the console already uses. Give a different key, or none to have one generated.",
    );
  }
  writeKeyFileAtomically(file, key);
  return key;
}

/** Copies the old key to `secret.key.retired-<date>-<id>` (0600) unless a copy exists. */
function keepRetiredKey(oldKey: SecretKey, now: Date): string {
  const dir = path.dirname(secretKeyFile());
  const existing = fs
    .readdirSync(dir)
    .find((name) => name.startsWith("secret.key.retired-") && name.endsWith(`-${oldKey.id}`));
  if (existing) return path.join(dir, existing);
  const file = retiredSecretKeyFile(oldKey, now);
  writeKeyFileAtomically(file, oldKey);
  return file;
}

async function resealToEnvironmentKey(
  db: Database,
  options: RotationOptions,
): Promise<RotationReport> {
  if (options.newKey) {
    throw new AppError(
      "invalid_input",
      "CLUPILOT_SECRET_KEY is set, so the key lives in your environment and this command cannot " +
        "switch it. Set CLUPILOT_SECRET_KEY to the new key and CLUPILOT_PREVIOUS_SECRET_KEYS to " +
        "the old one, restart the console, then run `npm run secrets:rotate` without a new key.",
    );
  }
  const keyring = reloadKeyring();
  const resealed = await resealAll(db, keyring, keyring.current);
  const swept = await sweep(db, keyring.current, options.settleMs ?? 1_000);
  return {
    mode: "environment",
    fromKeyIds: [...keyring.byId.keys()].filter((id) => id !== keyring.current.id),
    toKeyId: keyring.current.id,
    resealed,
    swept,
    verified: await verifyAll(db, keyring.current),
    retiredKeyFile: null,
  };
}

type SealedRow = { id: string; sealed: string };

/**
 * Re-seals, in ONE transaction, every envelope not yet under `newKey`. The sealed tables are
 * locked against writes meanwhile (reads go on), so no secret is written beside the rotation
 * and then missed. An envelope no known key opens aborts the whole transaction: nothing is
 * half-rotated, nothing is thrown away.
 */
async function resealAll(
  db: Database,
  keyring: Keyring,
  newKey: SecretKey,
): Promise<Record<string, number>> {
  const columns = sealedColumns();
  return db.transaction(async (tx) => {
    const tables = [...new Set(columns.map((column) => column.table))];
    await tx.execute(
      sql`lock table ${sql.join(
        tables.map((table) => sql.identifier(table)),
        sql`, `,
      )} in exclusive mode`,
    );
    const counts: Record<string, number> = {};
    for (const column of columns) {
      const rows = await staleRows(tx, column, newKey);
      for (const row of rows) {
        await tx.execute(
          sql`update ${sql.identifier(column.table)}
              set ${sql.identifier(column.column)} = ${seal(open(row, column, keyring), newKey)}
              where ${sql.identifier(column.primaryKey)} = ${row.id}`,
        );
      }
      counts[`${column.table}.${column.column}`] = rows.length;
    }
    return counts;
  });
}

type Executor = Pick<Database, "execute">;

async function staleRows(
  tx: Executor,
  column: SealedColumn,
  newKey: SecretKey,
): Promise<SealedRow[]> {
  const result = await tx.execute<SealedRow>(
    sql`select ${sql.identifier(column.primaryKey)}::text as id, ${sql.identifier(column.column)} as sealed
        from ${sql.identifier(column.table)}
        where ${sql.identifier(column.column)} is not null
          and ${sql.identifier(column.column)} not like ${`v1.${newKey.id}.%`}
        order by 1`,
  );
  return result.rows;
}

function open(row: SealedRow, column: SealedColumn, keyring: Keyring): string {
  try {
    return unseal(row.sealed, keyring);
  } catch {
    // The reason names key ids only; the envelope's text is not repeated.
    throw new AppError(
      "conflict",
      `${column.table}.${column.column} of row ${row.id} cannot be opened with any key this ` +
        `console has (it names key ${safeKeyId(row.sealed)}). Nothing was changed. Put the key ` +
        `it was sealed with into ${path.dirname(secretKeyFile())} as secret.key.retired-<name> ` +
        `(or CLUPILOT_PREVIOUS_SECRET_KEYS) and run the command again.`,
    );
  }
}

function safeKeyId(envelope: string): string {
  try {
    return envelopeKeyId(envelope)
      .replace(/[^0-9a-f]/g, "?")
      .slice(0, 12);
  } catch {
    return "(not an envelope)";
  }
}

/**
 * A console running during the rotation may have sealed a secret with the old key just before
 * the switch (its write waited for the rotation's lock). Those few are re-sealed in follow-up
 * transactions until a look after a pause finds none; the old key is still on disk, so they
 * were readable all along.
 */
async function sweep(db: Database, newKey: SecretKey, settleMs: number): Promise<number> {
  let swept = 0;
  let settled = false;
  for (let round = 0; round < 20; round++) {
    const counts = await resealAll(db, reloadKeyring(), newKey);
    const found = Object.values(counts).reduce((sum, count) => sum + count, 0);
    swept += found;
    if (found > 0) continue;
    if (settled || settleMs === 0) return swept;
    await new Promise((resolve) => setTimeout(resolve, settleMs));
    settled = true;
  }
  throw new AppError(
    "unavailable",
    `Secrets keep being sealed with an old key after the switch to key ${newKey.id}. Restart ` +
      `the console's web server and worker, then run the command again.`,
  );
}

/** Opens every envelope with the new key alone: the proof the old key is no longer needed. */
async function verifyAll(db: Database, newKey: SecretKey): Promise<number> {
  let verified = 0;
  for (const column of sealedColumns()) {
    const result = await db.execute<{ sealed: string }>(
      sql`select ${sql.identifier(column.column)} as sealed from ${sql.identifier(column.table)}
          where ${sql.identifier(column.column)} is not null`,
    );
    for (const row of result.rows) {
      unseal(row.sealed, newKey);
      verified++;
    }
  }
  return verified;
}
