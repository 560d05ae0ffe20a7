import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { runAs, type PostgresIdentity } from "./embedded-postgres-process";

/*
 * Where the embedded PostgreSQL's programs and data live, and whom they run as.
 *
 * As a normal user, PostgreSQL runs as that user, straight from node_modules, with its cluster
 * in the data folder. PostgreSQL refuses to run as root, so as root it runs as the `postgres`
 * system user, which must be able to reach — search every folder above — both the programs it
 * runs and its cluster's folder. A clone under /root (mode 0700), or a data folder inside any
 * folder only root can enter, gives it neither, and the console never loosens the permissions
 * of folders it does not own (no chmod of /root). So as root:
 *
 * - the programs are a copy of the package's native tree (bin, lib, share: about 60 MB, made
 *   once per package version, reflinked where the file system can) in
 *   `/var/lib/clupilot/postgres-<version>-<platform>-<arch>`, owned and writable by root only:
 *   the postgres user runs them but cannot change them, even when the clone belongs to someone;
 * - the cluster stays in the data folder when the postgres user can reach it there (as it
 *   always did); when it cannot, it is created in `/var/lib/clupilot/clusters/<random id>`
 *   (postgres, 0700) and the data folder gets a symbolic link to it (`.data/postgres -> …`),
 *   which root follows and which tells whoever lists the data folder where the data is. The
 *   choice is made once, when the cluster is created; later starts follow what is there, so
 *   a permission change never makes a second, empty cluster appear.
 *
 * Rejected: a user namespace mapping a non-root uid onto root (PostgreSQL would start, but act
 * as root on the host's files), and opening the folders above the data folder to others.
 * docs/embedded-postgres.md has the whole picture.
 */

/** The root-owned folder, traversable by the postgres user, for its programs and clusters. */
export const SYSTEM_DIR = "/var/lib/clupilot";

export type PostgresBinaries = { pg_ctl: string; initdb: string };

export type PostgresHost = {
  identity: PostgresIdentity;
  binaries: PostgresBinaries;
  /** As root, the folder for the postgres user's programs and relocated clusters; else null. */
  systemDir: string | null;
};

export async function postgresHost(systemDir = SYSTEM_DIR): Promise<PostgresHost> {
  const packaged = await packagedPostgres();
  if (process.getuid?.() !== 0) {
    return { identity: {}, binaries: binariesIn(packaged.native), systemDir: null };
  }
  const identity = await postgresUser();
  await prepareSystemDir(systemDir, identity);
  return { identity, binaries: binariesIn(copiedOnce(packaged, systemDir)), systemDir };
}

/**
 * Whether `identity` can reach `folder` (search permission on it and on every folder above
 * it). The system answers, so ACLs and the like count; a failure to ask throws.
 */
export async function canEnter(identity: PostgresIdentity, folder: string): Promise<boolean> {
  return (await runAs("test", ["-x", folder], identity)).code === 0;
}

/** The folder holding data folder `dir`'s cluster (its link followed), or null if none yet. */
export function existingCluster(dir: string): string | null {
  return fs.existsSync(path.join(dir, "PG_VERSION")) ? fs.realpathSync(dir) : null;
}

/** The folder `pg_ctl -D` is given for `dir`: its link followed when there is one. */
export function clusterFolder(dir: string): string {
  try {
    return fs.realpathSync(dir);
  } catch {
    return dir;
  }
}

export type NewCluster = {
  /** Empty, owned by the user PostgreSQL runs as, mode 0700: initdb's target. */
  folder: string;
  /** After initdb: makes `dir` lead to the cluster. */
  placed(): void;
  /** After a failed initdb: removes what was created outside the data folder. */
  discard(): void;
};

/** A folder for data folder `dir`'s first cluster (see the top of this file for where). */
export async function newClusterFolder(
  dir: string,
  host: PostgresHost,
  log: (line: string) => void,
): Promise<NewCluster> {
  refuseOccupied(dir);
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  if (!host.systemDir || (await canEnter(host.identity, path.dirname(dir)))) {
    fs.mkdirSync(dir, { recursive: true });
    fs.chmodSync(dir, 0o700);
    ownBy(dir, host.identity);
    return { folder: dir, placed: () => {}, discard: () => {} };
  }
  const clusters = path.join(host.systemDir, "clusters");
  fs.mkdirSync(clusters, { recursive: true, mode: 0o711 });
  const folder = path.join(clusters, crypto.randomBytes(8).toString("hex"));
  fs.mkdirSync(folder, { mode: 0o700 });
  ownBy(folder, host.identity);
  log(
    `the postgres user cannot reach ${path.dirname(dir)}: the cluster is created in ${folder} ` +
      `and ${dir} links to it`,
  );
  return {
    folder,
    placed() {
      if (fs.existsSync(dir)) fs.rmdirSync(dir);
      fs.symlinkSync(folder, dir);
    },
    discard() {
      fs.rmSync(folder, { recursive: true, force: true });
    },
  };
}

/** An existing cluster the postgres user cannot reach (folders above it were closed since). */
export async function assertReachable(
  dir: string,
  cluster: string,
  host: PostgresHost,
): Promise<void> {
  if (!host.systemDir || (await canEnter(host.identity, cluster))) return;
  const target = path.join(host.systemDir, "clusters", crypto.randomBytes(8).toString("hex"));
  throw new Error(
    `The postgres user, which runs the embedded PostgreSQL when the console runs as root, ` +
      `cannot reach the cluster in ${cluster}: a folder above it is closed to other users. ` +
      `Stop the console and move the cluster where it can reach it: ` +
      `mkdir -p -m 711 ${path.dirname(target)} && mv ${cluster} ${target} && ln -s ${target} ${dir}`,
  );
}

function refuseOccupied(dir: string): void {
  const stat = fs.lstatSync(dir, { throwIfNoEntry: false });
  if (!stat) return;
  if (stat.isSymbolicLink()) {
    // Its target may be on a disk that is not mounted yet: never create a new cluster there.
    throw new Error(
      `${dir} links to ${fs.readlinkSync(dir)}, which holds no PostgreSQL cluster (is its disk ` +
        `mounted?). Nothing was created: bring that folder back, or remove the link to start ` +
        `with an empty database.`,
    );
  }
  if (!stat.isDirectory() || fs.readdirSync(dir).length > 0) {
    throw new Error(
      `${dir} exists but holds no PostgreSQL cluster (no PG_VERSION): move it away, or set ` +
        `CLUPILOT_DATA_DIR to another folder.`,
    );
  }
}

function ownBy(folder: string, identity: PostgresIdentity): void {
  if (identity.uid !== undefined) fs.chownSync(folder, identity.uid, identity.gid!);
}

/**
 * The `embedded-postgres` platform package's native tree and version. The `embedded-postgres`
 * module itself is not imported: it installs exit hooks on SIGINT/SIGTERM that end the whole
 * process with code 130, before `npm start` has stopped its children.
 */
async function packagedPostgres(): Promise<{ native: string; version: string }> {
  const name = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  const { pg_ctl } = (await import(name)) as { pg_ctl: string };
  const native = path.dirname(path.dirname(pg_ctl));
  const manifest = fs.readFileSync(path.join(native, "..", "package.json"), "utf8");
  return { native, version: (JSON.parse(manifest) as { version: string }).version };
}

function binariesIn(native: string): PostgresBinaries {
  return { pg_ctl: path.join(native, "bin", "pg_ctl"), initdb: path.join(native, "bin", "initdb") };
}

/** The system folder's copy of the native tree, made on the first start of each version. */
function copiedOnce(packaged: { native: string; version: string }, systemDir: string): string {
  const target = path.join(systemDir, `postgres-${packaged.version}-${os.platform()}-${os.arch()}`);
  // Complete or absent: a copy only gets this name by the rename below.
  if (fs.existsSync(target)) return target;
  const partial = `${target}.partial-${process.pid}-${crypto.randomBytes(4).toString("hex")}`;
  try {
    fs.cpSync(packaged.native, partial, {
      recursive: true,
      mode: fs.constants.COPYFILE_FICLONE,
      verbatimSymlinks: true,
    });
    writableByRootOnly(partial);
    fs.renameSync(partial, target);
  } catch (error) {
    fs.rmSync(partial, { recursive: true, force: true });
    // Another start copied the same version meanwhile: its copy is as good as ours.
    if (!fs.existsSync(target)) {
      throw new Error(
        `could not copy PostgreSQL's programs to ${target}: ${(error as Error).message}`,
      );
    }
  }
  return target;
}

/** Whatever modes node_modules had, the postgres user may run the copy but never change it. */
function writableByRootOnly(tree: string): void {
  fs.chmodSync(tree, 0o755);
  for (const entry of fs.readdirSync(tree, { withFileTypes: true, recursive: true })) {
    if (entry.isSymbolicLink()) continue;
    const file = path.join(entry.parentPath, entry.name);
    const executable = entry.isDirectory() || (fs.statSync(file).mode & 0o111) !== 0;
    fs.chmodSync(file, executable ? 0o755 : 0o644);
  }
}

async function prepareSystemDir(systemDir: string, identity: PostgresIdentity): Promise<void> {
  try {
    fs.mkdirSync(systemDir, { recursive: true, mode: 0o711 });
  } catch (error) {
    throw new Error(
      `could not create ${systemDir} (${(error as NodeJS.ErrnoException).code}), where the ` +
        `embedded PostgreSQL's programs live when the console runs as root: create it ` +
        `(mkdir -m 711 ${systemDir}) or set DATABASE_URL to a PostgreSQL of your own.`,
    );
  }
  const stat = fs.lstatSync(systemDir);
  if (!stat.isDirectory() || stat.uid !== 0 || (stat.mode & 0o022) !== 0) {
    const is = stat.isSymbolicLink()
      ? "a symbolic link"
      : stat.isDirectory()
        ? "a folder"
        : "a file";
    throw new Error(
      `${systemDir} holds the programs the postgres user runs, so only root may write it, but ` +
        `it is ${is} owned by uid ${stat.uid} with mode ${(stat.mode & 0o777).toString(8)}. ` +
        `Make it root's: chown root:root ${systemDir} && chmod 711 ${systemDir}`,
    );
  }
  if (!(await canEnter(identity, systemDir))) {
    throw new Error(
      `The postgres user cannot reach ${systemDir}: a folder above it is closed to other ` +
        `users. Let it through (chmod o+x on that folder) or set DATABASE_URL.`,
    );
  }
}

/** Postgres refuses to run as root; as root it runs as a `postgres` system user (created once). */
async function postgresUser(): Promise<{ uid: number; gid: number }> {
  const id = async (flag: string) => (await runAs("id", [flag, "postgres"], {})).output.trim();
  if (!/^\d+$/.test(await id("-u"))) {
    await runAs("groupadd", ["--system", "postgres"], {});
    const created = await runAs(
      "useradd",
      ["--system", "-g", "postgres", "-M", "-s", "/usr/sbin/nologin", "postgres"],
      {},
    );
    if (created.code !== 0) {
      throw new Error(
        `could not create the postgres user the embedded PostgreSQL runs as under root: ` +
          `${created.output.trim()}. Create it (useradd --system postgres) or set DATABASE_URL.`,
      );
    }
  }
  return { uid: Number(await id("-u")), gid: Number(await id("-g")) };
}
