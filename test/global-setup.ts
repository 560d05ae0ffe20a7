import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { TestProject } from "vitest/node";
import { startEmbeddedPostgres } from "../lib/db/embedded-postgres";
import { migrateDatabase } from "../lib/db/migrate";

/**
 * One real PostgreSQL for the whole integration run. A migrated template database is prepared
 * once; every test file clones it (test/db.ts), so files never see each other's rows.
 */
export default async function setup(project: TestProject) {
  const externalUrl = process.env.TEST_DATABASE_URL;
  let stop = async () => {};
  let baseUrl: string;
  if (externalUrl) {
    baseUrl = externalUrl;
  } else {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "clupilot-test-pg-"));
    // Reachable by the postgres user (as root), so the cluster is created inside this folder
    // and goes with it, instead of in the system folder (lib/db/embedded-postgres-layout.ts).
    fs.chmodSync(dir, 0o755);
    const pg = await startEmbeddedPostgres({ dir: path.join(dir, "db") });
    baseUrl = pg.url;
    const stopOnSignal = stopPostgresOnSignal(pg.dataDir);
    await skipDurability(baseUrl);
    stop = async () => {
      stopOnSignal.cancel();
      await pg.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    };
  }
  const templateUrl = await recreateDatabase(baseUrl, "clupilot_template");
  await migrateDatabase(templateUrl);
  project.provide("postgresUrl", baseUrl);
  return stop;
}

/**
 * The shared cluster is thrown away after the run and never crashes under a test (tests that kill
 * PostgreSQL start their own, test/restartable-postgres.ts): a commit need not wait for the disk.
 * What a commit makes visible to other sessions is the same; only a crash could lose it. On the
 * 2-core machine, a busy one, the flush made each single-row commit 3 to 8 ms slower.
 */
async function skipDurability(baseUrl: string): Promise<void> {
  const { default: pg } = await import("pg");
  const client = new pg.Client({ connectionString: baseUrl });
  await client.connect();
  try {
    for (const setting of ["fsync", "synchronous_commit", "full_page_writes"]) {
      await client.query(`alter system set ${setting} = off`);
    }
    await client.query("select pg_reload_conf()");
  } finally {
    await client.end();
  }
}

async function recreateDatabase(baseUrl: string, name: string): Promise<string> {
  const { default: pg } = await import("pg");
  const client = new pg.Client({ connectionString: baseUrl });
  await client.connect();
  try {
    await client.query(`drop database if exists "${name}" with (force)`);
    await client.query(`create database "${name}"`);
  } finally {
    await client.end();
  }
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

declare module "vitest" {
  export interface ProvidedContext {
    postgresUrl: string;
  }
}

/**
 * vitest ends on SIGTERM or SIGHUP without running global teardowns, and the server pg_ctl
 * started is a daemon of its own: it would outlive the run (found after killing a run). On
 * those signals the postmaster gets an immediate shutdown (SIGQUIT), then the signal does what
 * it would have done. The postmaster is known by its pid file and signalled only when its
 * command line names this very cluster folder.
 */
function stopPostgresOnSignal(dataDir: string) {
  const signals = ["SIGTERM", "SIGHUP"] as const;
  const onSignal = (signal: NodeJS.Signals) => {
    try {
      const pid = Number(
        fs.readFileSync(path.join(dataDir, "postmaster.pid"), "utf8").split("\n")[0],
      );
      const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      if (cmdline[cmdline.indexOf("-D") + 1] === dataDir) process.kill(pid, "SIGQUIT");
    } catch {
      // No pid file or no such process: nothing of ours is running.
    }
    cancel();
    process.kill(process.pid, signal);
  };
  const cancel = () => {
    for (const signal of signals) process.off(signal, onSignal);
  };
  for (const signal of signals) process.on(signal, onSignal);
  return { cancel };
}
