/**
 * `npm run admin -- <command>`: user and token management without a browser, for headless
 * installs and automation. Reaches the database the way `npm start` does.
 *
 *   create-user --name NAME --role viewer|operator|admin   (password from stdin)
 *   create-token --user NAME [--label LABEL]               (prints the token, nothing else)
 *
 * Audit rows name the actor `cli`.
 */
import { parseArgs } from "node:util";
import { z } from "zod";
import { createApiTokenAs, createUserAs } from "../lib/auth/account-operations";
import { openConsoleDatabase } from "../lib/auth/cli-database";
import { readPassword } from "../lib/auth/cli-password";
import { ROLES } from "../lib/roles";
import { ZCreateToken, ZCreateUser } from "../lib/auth/schemas";
import { findUserByName } from "../lib/auth/users";
import { createDb, type Database } from "../lib/db/client";
import { AppError } from "../lib/errors";

const CLI_ACTOR = { userId: null, name: "cli", role: "cli" as const };

const USAGE = `usage:
  npm run admin -- create-user --name NAME --role ${ROLES.join("|")}   (password on stdin)
  npm run admin -- create-token --user NAME [--label LABEL]`;

/** Everything but the token goes to stderr, so `$(npm run -s admin -- create-token …)` is clean. */
const say = (line: string) => process.stderr.write(`${line}\n`);

class UsageError extends Error {}

async function createUserCommand(db: Database, args: string[]) {
  const { values } = parseArgs({
    args,
    options: { name: { type: "string" }, role: { type: "string" } },
  });
  if (!values.name) throw new UsageError("create-user needs --name NAME.");
  if (!values.role || !(ROLES as readonly string[]).includes(values.role)) {
    throw new UsageError(
      `Unknown role ${JSON.stringify(values.role ?? "")}: use one of ${ROLES.join(", ")}.`,
    );
  }
  const password = await readPassword();
  if (password === "") throw new UsageError("The password is empty: nothing was created.");
  const input = ZCreateUser.parse({ name: values.name, role: values.role, password });
  const user = await createUserAs(db, CLI_ACTOR, input);
  say(`created user ${user.name} (${user.role})`);
}

async function createTokenCommand(db: Database, args: string[]) {
  const { values } = parseArgs({
    args,
    options: { user: { type: "string" }, label: { type: "string" } },
  });
  if (!values.user) throw new UsageError("create-token needs --user NAME.");
  const { label } = ZCreateToken.parse({ label: values.label ?? "created with the CLI" });
  const owner = await findUserByName(db, values.user);
  if (!owner) throw new UsageError(`No user named ${values.user}. Create it with create-user.`);
  if (owner.disabled) throw new UsageError(`${owner.name} is disabled: enable the account first.`);
  const created = await createApiTokenAs(db, CLI_ACTOR, owner, label);
  process.stdout.write(`${created.token}\n`);
  say(`token ${created.prefix}… for ${owner.name} (${owner.role}); it is not shown again`);
}

const COMMANDS: Record<string, (db: Database, args: string[]) => Promise<void>> = {
  "create-user": createUserCommand,
  "create-token": createTokenCommand,
};

async function main(): Promise<number> {
  const [command, ...args] = process.argv.slice(2);
  const run = command ? COMMANDS[command] : undefined;
  if (!run) {
    say(command ? `Unknown command ${command}.\n${USAGE}` : USAGE);
    return 2;
  }
  const database = await openConsoleDatabase(say);
  const { pool, db } = createDb(database.url, 2);
  try {
    await run(db, args);
    return 0;
  } catch (error) {
    say(describe(error));
    return 1;
  } finally {
    await pool.end();
    await database.release();
  }
}

function describe(error: unknown): string {
  if (error instanceof z.ZodError) {
    return error.issues
      .map((issue) => `${issue.path.join(".") || "input"}: ${issue.message}`)
      .join("\n");
  }
  if (error instanceof AppError || error instanceof UsageError) return error.message;
  if (error instanceof TypeError && "code" in error) return `${error.message}\n${USAGE}`; // parseArgs
  return `failed: ${error instanceof Error ? error.message : String(error)}`;
}

main().then(
  (code) => process.exit(code),
  (error: Error) => {
    say(`could not run: ${error.message}`);
    process.exit(1);
  },
);
