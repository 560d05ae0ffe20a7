import { describe, expect, it } from "vitest";
import { z } from "zod";
import { registerTestDatabase } from "@/test/db";
import { issueSetupToken, parseSetupInput } from "./setup";

const database = registerTestDatabase(2);

async function fieldsRefused(raw: Record<string, unknown>): Promise<string[]> {
  try {
    await parseSetupInput(database.db, raw);
    return [];
  } catch (error) {
    if (!(error instanceof z.ZodError)) throw error;
    return [...new Set(error.issues.map((issue) => String(issue.path[0])))].sort();
  }
}

/* Issue 32, item 16: the setup form names every field it refuses at once. */
describe("the setup form's input", () => {
  it("names a wrong token beside a refused password, not only after the password is fixed", async () => {
    const token = (await issueSetupToken(database.db))!;
    expect(await fieldsRefused({ setupToken: "nope", name: "alice", password: "short" })).toEqual([
      "password",
      "setupToken",
    ]);
    expect(await fieldsRefused({ setupToken: token, name: "alice", password: "short" })).toEqual([
      "password",
    ]);
    expect(await fieldsRefused({ setupToken: "", name: "", password: "short" })).toEqual([
      "name",
      "password",
      "setupToken",
    ]);
    await expect(
      parseSetupInput(database.db, {
        setupToken: ` ${token} `,
        name: "alice",
        password: "a long enough password",
      }),
    ).resolves.toMatchObject({ setupToken: token, name: "alice" });
  });
});
