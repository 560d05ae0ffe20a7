import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import pg from "pg";
import {
  adoptStoredPassword,
  clusterUrl,
  EMBEDDED_USER,
  passwordFileOf,
  readStoredPassword,
  storedPassword,
} from "./embedded-postgres-credentials";
import {
  assertReachable,
  clusterFolder,
  existingCluster,
  newClusterFolder,
  postgresHost,
  type PostgresHost,
} from "./embedded-postgres-layout";
import { runAs } from "./embedded-postgres-process";

export type EmbeddedPostgresHandle = {
  /** Connection string of the `postgres` database; create others with `createDatabase`. */
  url: string;
  port: number;
  /** The cluster's own folder (PGDATA): the data folder, or where its link leads. */
  dataDir: string;
  createDatabase(name: string): Promise<string>;
  stop(): Promise<void>;
};

export type EmbeddedPostgresOptions = {
  /** The data folder's cluster folder, e.g. `.data/postgres`. */
  dir: string;
  port?: number;
  log?: (line: string) => void;
  /** As root: where the postgres user's programs and relocated clusters live (tests use their own). */
  systemDir?: string;
};

/**
 * The connection string of a database in the embedded cluster of data folder `dir` listening
 * on `port`, with the cluster's generated password (kept 0600 beside `dir`).
 */
export function embeddedPostgresUrl(dir: string, port: number, database: string): string {
  const password = readStoredPassword(dir);
  if (password === null) {
    throw new Error(
      `No password file ${passwordFileOf(dir)} for the embedded PostgreSQL in ${dir}: ` +
        "start the console once with this version (npm start); it generates the password.",
    );
  }
  return clusterUrl(port, password, database);
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

/**
 * Runs PostgreSQL from the `embedded-postgres` package for data folder `dir` (initialised on
 * first use, kept across restarts). As root it runs as the `postgres` user, from programs and
 * possibly a cluster folder outside the data folder (lib/db/embedded-postgres-layout.ts says
 * where and why). It listens on 127.0.0.1 only, with no Unix socket, and takes only the
 * password generated at initialisation (lib/db/embedded-postgres-credentials.ts): the database
 * is the console's alone, not any local user's.
 *
 * The server is started with `pg_ctl`, which puts it in its own session: a Ctrl-C in the
 * terminal reaches the console's processes, which stop their work first, and only then is the
 * database stopped — instead of the database dying under in-flight ticks.
 */
export async function startEmbeddedPostgres(
  options: EmbeddedPostgresOptions,
): Promise<EmbeddedPostgresHandle> {
  const port = options.port ?? (await freePort());
  const dir = path.resolve(options.dir);
  const log = options.log ?? (() => {});
  const host = await postgresHost(options.systemDir);
  const password = storedPassword(dir);
  let cluster = existingCluster(dir);
  if (cluster) await assertReachable(dir, cluster, host);
  else cluster = await initialise(dir, host, password, log);
  const ctl = (args: string[]) =>
    runAs(host.binaries.pg_ctl, ["-D", cluster, ...args], host.identity);

  // A server left running on this very cluster (the console was killed): pg_ctl knows it by
  // the cluster's own pid file, so stopping it cannot hit another server.
  if ((await ctl(["status"])).code === 0) {
    log("stopping a PostgreSQL left running on this data folder");
    await ctl(["stop", "-m", "fast", "-w", "-t", "60"]);
  }
  const started = await ctl([
    "start",
    "-w",
    "-t",
    "60",
    "-l",
    path.join(cluster, "postgres.log"),
    "-o",
    `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=`,
  ]);
  if (started.code !== 0) {
    throw new Error(
      `Embedded PostgreSQL in ${cluster} did not start on port ${port}: ${started.output.trim()}. ` +
        `Is the port taken? See ${path.join(cluster, "postgres.log")}.`,
    );
  }
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await ctl(["stop", "-m", "fast", "-w", "-t", "60"]);
  };
  try {
    await adoptStoredPassword(port, dir, log);
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    url: clusterUrl(port, password, "postgres"),
    port,
    dataDir: cluster,
    async createDatabase(name) {
      const client = new pg.Client({ connectionString: clusterUrl(port, password, "postgres") });
      await client.connect();
      try {
        const exists = await client.query("select 1 from pg_database where datname = $1", [name]);
        if (exists.rowCount === 0) {
          await client.query(`create database "${name.replaceAll('"', '""')}"`);
        }
      } finally {
        await client.end();
      }
      return clusterUrl(port, password, name);
    },
    stop,
  };
}

/**
 * Creates the cluster with the generated password. initdb reads it from a file: that file is
 * 0600, owned by the user initdb runs as, in a 0700 folder beside the cluster's folder (never
 * in the shared temp folder), and removed as soon as initdb has ended.
 */
async function initialise(
  dir: string,
  host: PostgresHost,
  password: string,
  log: (line: string) => void,
): Promise<string> {
  const cluster = await newClusterFolder(dir, host, log);
  const scratch = fs.mkdtempSync(path.join(path.dirname(cluster.folder), ".initdb-"));
  try {
    const passwordFile = path.join(scratch, "password");
    fs.writeFileSync(passwordFile, `${password}\n`, { mode: 0o600, flag: "wx" });
    const { uid, gid } = host.identity;
    if (uid !== undefined) {
      fs.chownSync(scratch, uid, gid!);
      fs.chownSync(passwordFile, uid, gid!);
    }
    const result = await runAs(
      host.binaries.initdb,
      [
        `--pgdata=${cluster.folder}`,
        "--auth=scram-sha-256",
        `--username=${EMBEDDED_USER}`,
        `--pwfile=${passwordFile}`,
        "--encoding=UTF8",
        "--locale=C",
      ],
      host.identity,
    );
    log(result.output.trim());
    if (result.code !== 0) {
      cluster.discard();
      throw new Error(`initdb failed in ${cluster.folder}: ${result.output.trim()}`);
    }
  } finally {
    fs.rmSync(scratch, { recursive: true, force: true });
  }
  cluster.placed();
  return cluster.folder;
}

export type EmbeddedPostgresStatus = "running" | "stopped" | "unknown";

/**
 * Asks `pg_ctl status` whether the server of data folder `dir` is running (npm start's supervisor
 * polls it to restart a database that died). "stopped" only when pg_ctl says no server runs on
 * that folder; anything it could not answer is "unknown", never "stopped". The binaries and the
 * user are looked up once per probe, not on every poll.
 */
export function embeddedPostgresStatusProbe(
  dir: string,
  options: { systemDir?: string } = {},
): () => Promise<EmbeddedPostgresStatus> {
  let host: Promise<PostgresHost> | undefined;
  return async () => {
    host ??= postgresHost(options.systemDir);
    try {
      const { binaries, identity } = await host;
      const args = ["-D", clusterFolder(path.resolve(dir)), "status"];
      const { code } = await runAs(binaries.pg_ctl, args, identity);
      return code === 0 ? "running" : code === 3 ? "stopped" : "unknown";
    } catch {
      host = undefined; // look the binaries and the user up again on the next poll
      return "unknown";
    }
  };
}
