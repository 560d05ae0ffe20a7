import { and, eq, isNull } from "drizzle-orm";
import { z } from "zod";
import type { Database } from "@/lib/db/client";
import { setupTokens, users } from "@/lib/db/schema";
import { AppError, isUniqueViolation } from "@/lib/errors";
import { hashPassword } from "./password";
import { ZCompleteSetup, type TCompleteSetup } from "./schemas";
import { randomToken, sha256Hex } from "./secret-token";
import type { UserSummary } from "./users";
import { countUsers, nameTaken, userSummaryColumns } from "./users";

/** Whether the console still has no user, i.e. `/setup` is open. */
export async function setupOpen(db: Pick<Database, "select">): Promise<boolean> {
  return (await countUsers(db)) === 0;
}

/**
 * A fresh one-time setup token, or null when users exist. Earlier unused tokens are dropped:
 * only the token printed by the latest start works.
 */
export async function issueSetupToken(db: Database): Promise<string | null> {
  if (!(await setupOpen(db))) return null;
  const token = randomToken();
  await db.transaction(async (tx) => {
    await tx.delete(setupTokens).where(isNull(setupTokens.usedAt));
    await tx.insert(setupTokens).values({ tokenHash: sha256Hex(token) });
  });
  return token;
}

const WRONG_TOKEN = new AppError(
  "invalid_input",
  "That setup token is not valid. Use the one the latest npm start printed in its terminal.",
  { setupToken: ["Not the current setup token."] },
);
const SETUP_DONE = new AppError(
  "conflict",
  "Setup is done: an admin exists already. Sign in instead.",
);

/**
 * The setup form's input, every field judged at once: when the name or the password is refused,
 * a token that is not the current one is named too, in the same answer — not only after the
 * password was fixed (issue 32). The token is only looked at here; completeSetup uses it up.
 */
export async function parseSetupInput(
  db: Pick<Database, "select">,
  raw: Record<string, unknown>,
): Promise<TCompleteSetup> {
  const parsed = ZCompleteSetup.safeParse(raw);
  if (parsed.success) return parsed.data;
  const token = typeof raw.setupToken === "string" ? raw.setupToken.trim() : "";
  const tokenJudged = parsed.error.issues.some((issue) => issue.path[0] === "setupToken");
  if (!tokenJudged && token !== "" && !(await setupTokenCurrent(db, token))) {
    throw new z.ZodError([
      ...parsed.error.issues,
      {
        code: "custom",
        path: ["setupToken"],
        message: "Not the current setup token.",
        input: token,
      },
    ]);
  }
  throw parsed.error;
}

async function setupTokenCurrent(db: Pick<Database, "select">, token: string): Promise<boolean> {
  const [row] = await db
    .select({ id: setupTokens.id })
    .from(setupTokens)
    .where(and(eq(setupTokens.tokenHash, sha256Hex(token)), isNull(setupTokens.usedAt)));
  return row !== undefined;
}

/**
 * Trades the setup token for the first admin. In one transaction: the token is marked used
 * (its row lock serialises two requests with the same token; the one-used-ever index stops two
 * different tokens), no user may exist yet, and the admin is inserted.
 */
export async function completeSetup(
  db: Database,
  input: { setupToken: string; name: string; password: string },
): Promise<UserSummary> {
  const passwordHash = await hashPassword(input.password);
  try {
    return await db.transaction(async (tx) => {
      const [used] = await tx
        .update(setupTokens)
        .set({ usedAt: new Date() })
        .where(
          and(eq(setupTokens.tokenHash, sha256Hex(input.setupToken)), isNull(setupTokens.usedAt)),
        )
        .returning({ id: setupTokens.id });
      if (!(await setupOpen(tx))) throw SETUP_DONE;
      if (!used) throw WRONG_TOKEN;
      const [admin] = await tx
        .insert(users)
        .values({ name: input.name, role: "admin", passwordHash })
        .returning(userSummaryColumns);
      return admin!;
    });
  } catch (error) {
    // Another setup committed first (the one-used-token index), or the name raced a CLI user.
    if (isUniqueViolation(error)) {
      if (!(await setupOpen(db))) throw SETUP_DONE;
      throw nameTaken(input.name);
    }
    throw error;
  }
}
