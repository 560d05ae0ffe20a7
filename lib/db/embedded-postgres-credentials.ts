import "server-only";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import pg from "pg";
import { syncFolder } from "../config/sync-folder";

/** The embedded cluster's only role, created by initdb. */
export const EMBEDDED_USER = "clupilot";

/**
 * The fixed password of versions before the generated one. Only ever tried to move a cluster
 * from those versions onto its generated password; a cluster that has moved refuses it.
 */
export const LEGACY_PASSWORD = "clupilot-local";

/**
 * Where the cluster's generated password is kept: beside the cluster's folder in the data
 * folder (`.data/postgres-password` for `.data/postgres`), owned by the console's user, 0600.
 * Not inside the cluster's folder: that belongs to the postgres user, and a file it cannot
 * read there would break its own tools (pg_basebackup).
 */
export function passwordFileOf(dir: string): string {
  return `${path.resolve(dir)}-password`;
}

export function readStoredPassword(dir: string): string | null {
  try {
    return fs.readFileSync(passwordFileOf(dir), "utf8").trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw error;
  }
}

/**
 * The cluster's password, generated (32 random bytes) and stored the first time. The file is
 * written whole under a temporary name with mode 0600, synced, then linked into place, so it
 * is never readable by others, never torn by a crash, and a second process starting at the
 * same moment uses the first one's password instead of replacing it.
 */
export function storedPassword(dir: string): string {
  const existing = readStoredPassword(dir);
  if (existing) return existing;
  const file = passwordFileOf(dir);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const temp = `${file}.tmp-${process.pid}-${crypto.randomBytes(4).toString("hex")}`;
  const fd = fs.openSync(temp, "wx", 0o600);
  try {
    fs.writeSync(fd, `${crypto.randomBytes(32).toString("base64url")}\n`);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  try {
    fs.linkSync(temp, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  } finally {
    fs.rmSync(temp, { force: true });
  }
  syncFolder(path.dirname(file));
  return readStoredPassword(dir)!;
}

export function clusterUrl(port: number, password: string, database: string): string {
  return (
    `postgres://${EMBEDDED_USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/` +
    encodeURIComponent(database)
  );
}

/**
 * Makes sure the running cluster on `port` takes the stored password. A cluster from before
 * generated passwords (or one whose move was interrupted after the file was written) still
 * takes the legacy password: it is moved onto the stored one. Only a refused password
 * (28P01) counts as "not this password"; any other failure is an error, never a reason to
 * change the role.
 */
export async function adoptStoredPassword(
  port: number,
  dir: string,
  log: (line: string) => void,
): Promise<void> {
  const password = storedPassword(dir);
  const current = await connectUnlessRefused(clusterUrl(port, password, "postgres"));
  if (current) {
    await current.end();
    return;
  }
  const legacy = await connectUnlessRefused(clusterUrl(port, LEGACY_PASSWORD, "postgres"));
  if (!legacy) {
    throw new Error(
      `The embedded PostgreSQL in ${dir} refuses the password in ${passwordFileOf(dir)} (and ` +
        `the fixed one of earlier versions): that file is not this cluster's, or the role's ` +
        `password was changed by hand. Put back the file kept with this cluster, or set DATABASE_URL.`,
    );
  }
  try {
    // The verifier, not the password, goes over the wire and could reach the server's log.
    await legacy.query(
      `alter role "${EMBEDDED_USER}" password ${legacy.escapeLiteral(scramVerifier(password))}`,
    );
  } finally {
    await legacy.end();
  }
  log(
    `the embedded PostgreSQL now takes only its generated password (${passwordFileOf(dir)}, ` +
      `mode 0600); the fixed password of earlier versions is refused`,
  );
}

async function connectUnlessRefused(url: string): Promise<pg.Client | null> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  try {
    await client.connect();
    return client;
  } catch (error) {
    await client.end().catch(() => undefined);
    if ((error as { code?: string }).code === "28P01") return null;
    throw error;
  }
}

/**
 * The SCRAM-SHA-256 verifier PostgreSQL stores for `password` (RFC 5802 / 7677, PostgreSQL's
 * `SCRAM-SHA-256$iterations:salt$StoredKey:ServerKey` form), computed here the way psql's
 * \password does, so ALTER ROLE never carries the password itself. The generated passwords
 * are ASCII, which SASLprep leaves as they are.
 */
export function scramVerifier(password: string, iterations = 4096): string {
  const salt = crypto.randomBytes(16);
  const salted = crypto.pbkdf2Sync(password, salt, iterations, 32, "sha256");
  const hmac = (key: Buffer, text: string) =>
    crypto.createHmac("sha256", key).update(text).digest();
  const storedKey = crypto.createHash("sha256").update(hmac(salted, "Client Key")).digest();
  const serverKey = hmac(salted, "Server Key");
  const b64 = (bytes: Buffer) => bytes.toString("base64");
  return `SCRAM-SHA-256$${iterations}:${b64(salt)}$${b64(storedKey)}:${b64(serverKey)}`;
}
