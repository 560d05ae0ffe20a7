import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from "./embedded-postgres";
import {
  clusterUrl,
  LEGACY_PASSWORD,
  passwordFileOf,
  readStoredPassword,
} from "./embedded-postgres-credentials";

const asRoot = process.getuid?.() === 0;
const probeSource = path.resolve(import.meta.dirname, "../../test/other-user-probe.mjs");

// One system folder for the file: the programs are copied into it once, relocated clusters
// land in it, and it goes at the end. Traversable like /var/lib.
let systemDir: string;
const servers: EmbeddedPostgresHandle[] = [];
const folders: string[] = [];

beforeAll(() => {
  systemDir = fs.mkdtempSync(path.join(os.tmpdir(), "clupilot-pg-system-"));
  fs.chmodSync(systemDir, 0o711);
});

afterAll(async () => {
  for (const server of servers) await server.stop();
  for (const folder of [...folders, systemDir]) fs.rmSync(folder, { recursive: true, force: true });
});

/** A fresh folder removed after the file; `mode` 0o755 lets the postgres user and others in. */
function scratch(mode: number): string {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), "clupilot-pg-test-"));
  fs.chmodSync(folder, mode);
  folders.push(folder);
  return folder;
}

async function start(dir: string, log?: (line: string) => void) {
  const server = await startEmbeddedPostgres({ dir, systemDir, log });
  servers.push(server);
  return server;
}

async function query(url: string, sql: string): Promise<pg.QueryResultRow[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows;
  } finally {
    await client.end();
  }
}

/** The SQLSTATE a login with `password` ends in, or "accepted". */
async function loginOutcome(port: number, password: string): Promise<string> {
  try {
    await query(clusterUrl(port, password, "postgres"), "select 1");
    return "accepted";
  } catch (error) {
    return (error as { code?: string }).code ?? String(error);
  }
}

/** Runs test/other-user-probe.mjs as `nobody`, from a copy in a folder that user can reach. */
function asOtherUser(job: object): {
  started: Promise<void>;
  finish(): Promise<Record<string, unknown>>;
} {
  const home = scratch(0o755);
  const probe = path.join(home, "probe.mjs");
  fs.copyFileSync(probeSource, probe);
  fs.chmodSync(probe, 0o644);
  const nobody = (flag: string) =>
    Number(execFileSync("id", [flag, "nobody"], { encoding: "utf8" }));
  const child = spawn(process.execPath, [probe], {
    uid: nobody("-u"),
    gid: nobody("-g"),
    cwd: home,
    env: { PATH: process.env.PATH, NODE_ENV: "test" },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let output = "";
  let errors = "";
  child.stderr.on("data", (chunk) => (errors += chunk));
  child.stdin.on("error", () => undefined); // the probe may be gone when its stdin is closed
  const ended = new Promise<number | null>((resolve, reject) => {
    child.on("error", (error) =>
      reject(new Error(`could not run node (${process.execPath}) as nobody: ${error.message}`)),
    );
    child.on("close", resolve);
  });
  const started = new Promise<void>((resolve) =>
    child.stdout.on("data", (chunk) => {
      output += chunk;
      if (output.includes("\n")) resolve();
    }),
  );
  child.stdin.write(`${JSON.stringify(job)}\n`);
  return {
    started: Promise.race([started, ended.then(() => undefined)]),
    async finish() {
      child.stdin.end();
      const code = await ended;
      expect(code, errors).toBe(0);
      return JSON.parse(output.trim().split("\n").at(-1)!) as Record<string, unknown>;
    },
  };
}

describe.runIf(asRoot)("the embedded PostgreSQL under root", () => {
  it("in a data folder inside a folder only root can enter (a clone in /root), runs as the postgres user from root's copy of the programs, with its cluster linked from the data folder, and keeps its data across restarts", async () => {
    const home = scratch(0o700);
    const dir = path.join(home, "clupilot", ".data", "postgres");
    const lines: string[] = [];
    const first = await start(dir, (line) => lines.push(line));

    const url = await first.createDatabase("clupilot");
    await query(
      url,
      "create table kept (note text); insert into kept values ('from the first start')",
    );
    const cluster = fs.readlinkSync(dir);
    expect(path.dirname(cluster)).toBe(path.join(systemDir, "clusters"));
    expect(first.dataDir).toBe(cluster);
    expect(lines.join("\n")).toContain(`the cluster is created in ${cluster}`);
    const postgresUid = Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }));
    expect(fs.statSync(cluster).uid).toBe(postgresUid);
    expect(fs.statSync(cluster).mode & 0o777).toBe(0o700);
    const postmaster = Number(
      fs.readFileSync(path.join(dir, "postmaster.pid"), "utf8").split("\n")[0],
    );
    const status = fs.readFileSync(`/proc/${postmaster}/status`, "utf8");
    expect(status).toMatch(new RegExp(`^Uid:\\s+${postgresUid}\\s`, "m"));
    const program = fs.readlinkSync(`/proc/${postmaster}/exe`);
    expect(program.startsWith(`${systemDir}/postgres-`)).toBe(true);
    expect(fs.statSync(program).uid).toBe(0);
    expect(fs.statSync(program).mode & 0o022).toBe(0);
    expect(fs.statSync(home).mode & 0o777).toBe(0o700); // the user's folder was left alone
    await first.stop();

    const second = await start(dir);
    expect(second.dataDir).toBe(cluster);
    expect(await query(await second.createDatabase("clupilot"), "select note from kept")).toEqual([
      { note: "from the first start" },
    ]);
  });

  it("another local user can neither log in (without a password, with an empty one, with the old fixed one) nor read the password file, and finds no Unix socket", async () => {
    const dir = path.join(scratch(0o755), "postgres");
    const server = await start(dir);
    const password = readStoredPassword(dir)!;
    const other = asOtherUser({
      login: { port: server.port, passwords: [null, "", LEGACY_PASSWORD, password] },
      read: [passwordFileOf(dir)],
      sockets: [`/tmp/.s.PGSQL.${server.port}`, `/var/run/postgresql/.s.PGSQL.${server.port}`],
    });
    const seen = await other.finish();

    expect(seen.login).toEqual([
      "refused: the server asks for a password",
      expect.stringMatching(/^refused: 28P01 password authentication failed/),
      expect.stringMatching(/^refused: 28P01 password authentication failed/),
      "accepted", // the probe does log in with the right password: its refusals mean something
    ]);
    expect(seen.read).toEqual(["error: EACCES"]);
    expect(seen.sockets).toEqual(["error: ENOENT", "error: ENOENT"]);
  });

  it("generates the password into a 0600 file, and while the cluster is initialised no file another user can read holds it", async () => {
    const base = scratch(0o755);
    const dir = path.join(base, "data", "postgres");
    fs.writeFileSync(path.join(base, "canary"), "readable by anyone", { mode: 0o644 });
    const temp = path.join(base, "tmp");
    fs.mkdirSync(temp, { mode: 0o1777 });
    fs.chmodSync(temp, 0o1777);
    const previousTemp = process.env.TMPDIR;
    process.env.TMPDIR = temp; // anything that used the temp folder would land where it is watched
    const other = asOtherUser({ watch: { trees: [base] } });
    try {
      await other.started;
      await start(dir);
    } finally {
      if (previousTemp === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = previousTemp;
    }
    const seen = (await other.finish()) as { passes: number; readable: Record<string, string> };

    const file = passwordFileOf(dir);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.statSync(file).uid).toBe(0);
    const password = readStoredPassword(dir)!;
    expect(password).toMatch(/^[A-Za-z0-9_-]{43}$/); // 32 random bytes
    expect(seen.readable[path.join(base, "canary")]).toBe("readable by anyone");
    expect(seen.passes).toBeGreaterThan(10);
    const leaks = Object.entries(seen.readable).filter(([, content]) => content.includes(password));
    expect(leaks).toEqual([]);
    expect(fs.readdirSync(path.dirname(dir)).sort()).toEqual(["postgres", "postgres-password"]);
  });

  it("refuses a system folder other users can write, with the command that fixes it, before running anything from it", async () => {
    const open = scratch(0o777);
    await expect(
      startEmbeddedPostgres({ dir: path.join(scratch(0o755), "postgres"), systemDir: open }),
    ).rejects.toThrow(`chown root:root ${open} && chmod 711 ${open}`);
    expect(fs.readdirSync(open)).toEqual([]);
  });
});

describe("the embedded PostgreSQL's password", () => {
  it("a cluster from before generated passwords (the fixed one, no password file) moves onto a generated one at start and keeps its data; so does one whose move stopped after the file was written", async () => {
    const dir = path.join(scratch(0o755), "postgres");
    const before = await start(dir);
    await query(
      await before.createDatabase("clupilot"),
      `create table kept (note text); insert into kept values ('from before');
       alter role clupilot password '${LEGACY_PASSWORD}'`,
    );
    await before.stop();
    fs.rmSync(passwordFileOf(dir)); // what an earlier version left: the fixed password, no file

    const lines: string[] = [];
    const upgraded = await start(dir, (line) => lines.push(line));
    const password = readStoredPassword(dir)!;
    expect(password).not.toBe(LEGACY_PASSWORD);
    expect(fs.statSync(passwordFileOf(dir)).mode & 0o777).toBe(0o600);
    expect(lines.join("\n")).toContain("now takes only its generated password");
    expect(await loginOutcome(upgraded.port, LEGACY_PASSWORD)).toBe("28P01");
    expect(upgraded.url).toBe(clusterUrl(upgraded.port, password, "postgres"));
    expect(await query(await upgraded.createDatabase("clupilot"), "select note from kept")).toEqual(
      [{ note: "from before" }],
    );

    // Interrupted between writing the file and changing the role: the next start finishes it.
    await query(upgraded.url, `alter role clupilot password '${LEGACY_PASSWORD}'`);
    await upgraded.stop();
    const finished = await start(dir);
    expect(readStoredPassword(dir)).toBe(password);
    expect(await loginOutcome(finished.port, password)).toBe("accepted");
    expect(await loginOutcome(finished.port, LEGACY_PASSWORD)).toBe("28P01");
  });

  it("a data folder that links to a missing cluster (a disk not mounted) is an error saying what to do, and no new cluster is created there", async () => {
    const base = scratch(0o755);
    const dir = path.join(base, "postgres");
    const missing = path.join(base, "unmounted", "cluster");
    fs.symlinkSync(missing, dir);
    await expect(startEmbeddedPostgres({ dir, systemDir })).rejects.toThrow(
      `${dir} links to ${missing}, which holds no PostgreSQL cluster (is its disk mounted?)`,
    );
    expect(fs.existsSync(missing)).toBe(false);
  });
});
