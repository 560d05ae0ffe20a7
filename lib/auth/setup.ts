import { and, eq, isNull } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { setupTokens, users } from "@/lib/db/schema";
import { AppError, isUniqueViolation } from "@/lib/errors";
import { hashPassword } from "./password";
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
  "That setup token is not valid. Use the one printed by the latest `npm start`.",
  { setupToken: ["Not the current setup token."] },
);
const SETUP_DONE = new AppError(
  "conflict",
  "Setup is done: an admin exists already. Sign in instead.",
);

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
