import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { freePort, startEmbeddedPostgres } from "@/lib/db/embedded-postgres";
import { migrateDatabase } from "@/lib/db/migrate";
import { registerTestDatabase } from "@/test/db";
import { validateApiToken } from "./api-tokens";
import { signIn } from "./sign-in";

const root = path.resolve(import.meta.dirname, "../..");
const testDatabase = registerTestDatabase(2);

/** `npm run admin -- …` as a user runs it: a child process, the password on stdin. */
function admin(
  args: string[],
  stdin = "",
  env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: testDatabase.url },
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "scripts/admin.ts", ...args], {
      cwd: root,
      env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    child.on("error", reject);
    child.on("exit", (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(stdin);
  });
}

describe("npm run admin", () => {
  it("create-user takes the password from stdin; the user can sign in; audited as cli", async () => {
    const created = await admin(
      ["create-user", "--name", "erin", "--role", "operator"],
      "erin's long password\n",
    );
    expect(created.code, created.stderr).toBe(0);
    expect(created.stderr).toContain("created user erin (operator)");
    const session = await signIn(testDatabase.db, {
      name: "erin",
      password: "erin's long password",
      address: "127.0.0.1",
    });
    expect(session.user.role).toBe("operator");
    const audit = await testDatabase.db.execute<{
      actor_name: string;
      action: string;
      outcome: string;
    }>(sql`select actor_name, action, outcome from audit_log where target = 'user:erin'`);
    expect(audit.rows).toEqual([{ actor_name: "cli", action: "user.create", outcome: "success" }]);
  });

  it("create-token prints the token and nothing else on stdout; it acts as its owner", async () => {
    const result = await admin(["create-token", "--user", "ERIN", "--label", "backup"]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^clp_[A-Za-z0-9_-]{43}\n$/);
    const owner = await validateApiToken(testDatabase.db, result.stdout.trim());
    expect(owner?.name).toBe("erin");
    // The token itself never reaches stderr (terminal scrollback, CI logs).
    expect(result.stderr).not.toContain(result.stdout.trim());
  });

  it("clear errors: unknown role, taken name, empty password, unknown user, unknown command", async () => {
    const role = await admin(
      ["create-user", "--name", "frank", "--role", "root"],
      "pw pw pw pw pw\n",
    );
    expect(role.code).not.toBe(0);
    expect(role.stderr).toContain('Unknown role "root": use one of viewer, operator, admin.');

    const taken = await admin(
      ["create-user", "--name", "Erin", "--role", "viewer"],
      "another long pw\n",
    );
    expect(taken.code).toBe(1);
    expect(taken.stderr).toContain('A user named "Erin" exists already');

    const empty = await admin(["create-user", "--name", "frank", "--role", "viewer"], "\n");
    expect(empty.code).toBe(1);
    expect(empty.stderr).toContain("The password is empty");

    const nobody = await admin(["create-token", "--user", "nobody"]);
    expect(nobody.code).toBe(1);
    expect(nobody.stderr).toContain("No user named nobody");
    expect(nobody.stdout).toBe("");

    const unknown = await admin(["delete-everything"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("usage:");

    const [{ n }] = (
      await testDatabase.db.execute<{ n: number }>(
        sql`select count(*)::int as n from users where lower(name) = 'frank'`,
      )
    ).rows as [{ n: number }];
    expect(n).toBe(0);
  });
});

describe("npm run admin against the embedded database under CLUPILOT_DATA_DIR", () => {
  it("starts the stopped embedded Postgres for the command and stops it after; uses a running one and leaves it running", async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "clupilot-cli-"));
    fs.chmodSync(dataDir, 0o755); // the postgres user runs the cluster when we are root
    const port = await freePort();
    const dir = path.join(dataDir, "postgres");
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      CLUPILOT_DATA_DIR: dataDir,
      CLUPILOT_PG_PORT: String(port),
    };
    delete env.DATABASE_URL;
    // What a first `npm start` leaves behind: a migrated `clupilot` database, then stopped.
    let server = await startEmbeddedPostgres({ dir, port });
    try {
      await migrateDatabase(await server.createDatabase("clupilot"));
      await server.stop();

      const created = await admin(
        ["create-user", "--name", "gina", "--role", "admin"],
        "gina's long password\n",
        env,
      );
      expect(created.code, created.stderr).toBe(0);
      expect(created.stderr).toContain("starting the embedded PostgreSQL");
      expect(fs.existsSync(path.join(dir, "postmaster.pid"))).toBe(false); // stopped again

      // The console is running: the CLI uses its server and never stops it.
      server = await startEmbeddedPostgres({ dir, port });
      const token = await admin(["create-token", "--user", "gina"], "", env);
      expect(token.code, token.stderr).toBe(0);
      expect(token.stderr).not.toContain("starting the embedded PostgreSQL");
      expect(token.stdout).toMatch(/^clp_/);
      expect(fs.existsSync(path.join(dir, "postmaster.pid"))).toBe(true);
    } finally {
      await server.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
