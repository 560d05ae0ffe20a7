import { randomBytes } from "node:crypto";
import path from "node:path";
import { exitOf, spawnUntilEnd } from "../support/processes";
import type { ConsoleUnderTest } from "./console-under-test";

const root = path.resolve(import.meta.dirname, "../..");

export type SoakAccount = { name: string; password: string; token: string };
export type SoakAccounts = { admin: SoakAccount; operator: SoakAccount };

/**
 * An admin and an operator, each with an API token, made with the admin CLI against the running
 * console (scripts/admin.ts, as docs/operations.md, "CLI", shows): passwords on stdin, the token on stdout.
 */
export async function createSoakAccounts(target: ConsoleUnderTest): Promise<SoakAccounts> {
  const make = async (name: string, role: "admin" | "operator"): Promise<SoakAccount> => {
    const password = `soak-${role}-${randomBytes(18).toString("base64url")}`;
    await admin(target, ["create-user", "--name", name, "--role", role], `${password}\n`);
    const token = (await admin(target, ["create-token", "--user", name, "--label", "soak"])).trim();
    if (!/^clp_\S+$/.test(token)) throw new Error(`create-token printed no token: ${token}`);
    return { name, password, token };
  };
  const [admin_, operator] = await Promise.all([
    make("soak-admin", "admin"),
    make("soak-operator", "operator"),
  ]);
  return { admin: admin_, operator };
}

async function admin(target: ConsoleUnderTest, args: string[], stdin = ""): Promise<string> {
  // The CLI finds the running console's database as docs/operations.md, "CLI", says: by its data folder.
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    CLUPILOT_DATA_DIR: target.dataDir,
    CLUPILOT_PG_PORT: String(target.pgPort),
  };
  delete env.DATABASE_URL;
  const child = spawnUntilEnd(
    `admin CLI ${args[0]}`,
    process.execPath,
    ["--import", "tsx", "scripts/admin.ts", ...args],
    {
      cwd: root,
      env,
      stdio: ["pipe", "pipe", "pipe"],
    },
  );
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (chunk) => (stdout += chunk));
  child.stderr!.on("data", (chunk) => (stderr += chunk));
  child.stdin!.end(stdin);
  const code = await exitOf(child);
  if (code !== 0) throw new Error(`npm run admin -- ${args[0]} failed (${code}): ${stderr.trim()}`);
  return stdout;
}
