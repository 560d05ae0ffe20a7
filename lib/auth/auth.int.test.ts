import { eq, sql } from "drizzle-orm";
import { verify } from "@node-rs/argon2";
import { describe, expect, it, vi } from "vitest";
import { apiTokens, loginFailures, sessions, setupTokens, users } from "@/lib/db/schema";
import { createTestUser } from "@/test/auth";
import { registerTestDatabase } from "@/test/db";
import { createApiToken, revokeApiToken, validateApiToken } from "./api-tokens";
import { LOGIN_FAILURE_WINDOW_MS, MAX_LOGIN_FAILURES } from "./login-rate-limit";
import {
  createSession,
  listUserSessions,
  pruneExpiredSessions,
  SESSION_ABSOLUTE_MS,
  SESSION_IDLE_MS,
  validateSessionToken,
} from "./session";
import { completeSetup, issueSetupToken, setupOpen } from "./setup";
import { signIn } from "./sign-in";
import { sha256Hex } from "./secret-token";
import { changeUserRole, createUser, setUserDisabled } from "./users";
import { refusal } from "@/test/refusal";

const testDatabase = registerTestDatabase(4);

// Argon2 itself, with every verification it is asked for recorded: what a sign-in costs.
vi.mock("@node-rs/argon2", async (importOriginal) => {
  const actual = await importOriginal<typeof import("@node-rs/argon2")>();
  return { ...actual, verify: vi.fn(actual.verify) };
});

/** The Argon2 variant, version and cost parameters of a PHC hash string (`$argon2id$v=19$m=…`). */
const argon2Work = (phc: string) => phc.split("$").slice(1, 4).join("$");

// Setup first: it needs a database without users.
describe("first start setup", () => {
  it("the setup token works once, never again, and setup closes once an admin exists", async () => {
    expect(await setupOpen(testDatabase.db)).toBe(true);
    const stale = await issueSetupToken(testDatabase.db);
    const token = await issueSetupToken(testDatabase.db);
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    // Only the hash is stored; an earlier printed token is void.
    const rows = await testDatabase.db.select().from(setupTokens);
    expect(rows.map((r) => r.tokenHash)).toEqual([sha256Hex(token!)]);
    const wrong = await refusal(
      completeSetup(testDatabase.db, {
        setupToken: stale!,
        name: "root-admin",
        password: "long enough pw",
      }),
    );
    expect(wrong.fieldErrors?.setupToken).toBeDefined();

    // Two concurrent setups with the right token: exactly one admin.
    const attempts = await Promise.allSettled(
      ["first-admin", "second-admin"].map((name) =>
        completeSetup(testDatabase.db, { setupToken: token!, name, password: "long enough pw" }),
      ),
    );
    expect(attempts.filter((a) => a.status === "fulfilled")).toHaveLength(1);
    const all = await testDatabase.db.select().from(users);
    expect(all).toHaveLength(1);
    expect(all[0]!.role).toBe("admin");
    expect(all[0]!.passwordHash).toMatch(/^\$argon2id\$/);

    const again = await refusal(
      completeSetup(testDatabase.db, {
        setupToken: token!,
        name: "third",
        password: "long enough pw",
      }),
    );
    expect(again.message).toContain("Setup is done");
    expect(await setupOpen(testDatabase.db)).toBe(false);
    expect(await issueSetupToken(testDatabase.db)).toBeNull();
  });
});

describe("sessions", () => {
  it("a session token signs in; only its SHA-256 is stored", async () => {
    const { user } = await createTestUser(testDatabase.db, "viewer");
    const { token } = await createSession(testDatabase.db, user.id);
    const stored = await testDatabase.db
      .select()
      .from(sessions)
      .where(eq(sessions.userId, user.id));
    expect(stored.map((s) => s.id)).toContain(sha256Hex(token));
    expect(JSON.stringify(stored)).not.toContain(token);
    expect((await validateSessionToken(testDatabase.db, token))?.user.name).toBe(user.name);
    expect(await validateSessionToken(testDatabase.db, "not-a-token")).toBeNull();
  });

  it("expires at the absolute limit even when used all along", async () => {
    const { user } = await createTestUser(testDatabase.db, "viewer");
    const start = new Date();
    const { token } = await createSession(testDatabase.db, user.id, undefined, start);
    // Used every 6 hours: never idle, but past 7 days it ends.
    for (let at = 6 * 3600_000; at < SESSION_ABSOLUTE_MS; at += 6 * 3600_000) {
      expect(
        await validateSessionToken(testDatabase.db, token, new Date(start.getTime() + at)),
      ).not.toBeNull();
    }
    expect(
      await validateSessionToken(
        testDatabase.db,
        token,
        new Date(start.getTime() + SESSION_ABSOLUTE_MS),
      ),
    ).toBeNull();
    // …and it is gone, not only refused.
    expect(
      await testDatabase.db
        .select()
        .from(sessions)
        .where(eq(sessions.id, sha256Hex(token))),
    ).toEqual([]);
  });

  it("expires after the idle timeout", async () => {
    const { user } = await createTestUser(testDatabase.db, "viewer");
    const start = new Date();
    const { token } = await createSession(testDatabase.db, user.id, undefined, start);
    const idle = new Date(start.getTime() + SESSION_IDLE_MS);
    expect(await validateSessionToken(testDatabase.db, token, idle)).toBeNull();
  });

  it("the owner's list and the pruning agree with validation on which sessions are over", async () => {
    const { user, sessionToken } = await createTestUser(testDatabase.db, "viewer");
    const now = new Date();
    const at = (ms: number) => new Date(now.getTime() - ms);
    // Idle for exactly the limit, and signed in exactly the absolute limit ago: both over.
    const { token: idle } = await createSession(
      testDatabase.db,
      user.id,
      undefined,
      at(SESSION_IDLE_MS),
    );
    const { token: old } = await createSession(
      testDatabase.db,
      user.id,
      undefined,
      at(SESSION_ABSOLUTE_MS),
    );
    // Signed in 6 days ago, seen an hour ago: still usable.
    const { token: kept } = await createSession(
      testDatabase.db,
      user.id,
      undefined,
      at(6 * 86_400_000),
    );
    await testDatabase.db
      .update(sessions)
      .set({ lastSeenAt: at(3_600_000) })
      .where(eq(sessions.id, sha256Hex(kept)));

    const listed = await listUserSessions(testDatabase.db, user.id, sessionToken, now);
    expect(listed).toHaveLength(2);
    expect(listed.filter((session) => session.current)).toHaveLength(1);
    await pruneExpiredSessions(testDatabase.db, now);
    const left = await testDatabase.db
      .select({ id: sessions.id })
      .from(sessions)
      .where(eq(sessions.userId, user.id));
    expect(left.map((row) => row.id).sort()).toEqual(
      [sha256Hex(sessionToken), sha256Hex(kept)].sort(),
    );
    for (const token of [idle, old])
      expect(await validateSessionToken(testDatabase.db, token, now)).toBeNull();
    expect(await validateSessionToken(testDatabase.db, kept, now, { touch: false })).not.toBeNull();
  });

  it("a role change applies on the next request; a disabled user's session is refused", async () => {
    await createTestUser(testDatabase.db, "admin"); // keeps an enabled admin besides the one changed below
    const { user, sessionToken } = await createTestUser(testDatabase.db, "operator");
    await changeUserRole(testDatabase.db, user.id, "viewer");
    expect((await validateSessionToken(testDatabase.db, sessionToken))?.user.role).toBe("viewer");
    await setUserDisabled(testDatabase.db, user.id, true);
    expect(await validateSessionToken(testDatabase.db, sessionToken)).toBeNull();
  });
});

describe("sign-in rate limit", () => {
  const address = "192.0.2.10";

  it("5 failures per name and address within 15 minutes → 429 that says when to retry", async () => {
    const { user, password } = await createTestUser(testDatabase.db, "viewer");
    for (let i = 0; i < MAX_LOGIN_FAILURES; i++) {
      const wrong = await refusal(
        signIn(testDatabase.db, { name: user.name, password: "nope", address }),
      );
      expect(wrong.code).toBe("unauthenticated");
    }
    // Even the right password is refused now: the limit is checked before the password.
    const limited = await refusal(signIn(testDatabase.db, { name: user.name, password, address }));
    expect(limited.code).toBe("rate_limited");
    expect(limited.httpStatus).toBe(429);
    expect(limited.message).toMatch(/Try again in 15 minutes/);
    // Another address, and the same name in other case from the same address, are counted apart
    // from / together with it respectively.
    await expect(
      signIn(testDatabase.db, { name: user.name, password, address: "192.0.2.11" }),
    ).resolves.toMatchObject({ user: { id: user.id } });
    expect(
      (await refusal(signIn(testDatabase.db, { name: user.name.toUpperCase(), password, address })))
        .code,
    ).toBe("rate_limited");
  });

  it("ten parallel wrong guesses get exactly five password checks; the rest are refused with 429", async () => {
    const { user } = await createTestUser(testDatabase.db, "viewer");
    const results = await Promise.all(
      Array.from({ length: 10 }, () =>
        refusal(
          signIn(testDatabase.db, { name: user.name, password: "guess", address: "192.0.2.30" }),
        ),
      ),
    );
    const codes = results.map((error) => error.code).sort();
    expect(codes.filter((code) => code === "unauthenticated")).toHaveLength(MAX_LOGIN_FAILURES);
    expect(codes.filter((code) => code === "rate_limited")).toHaveLength(10 - MAX_LOGIN_FAILURES);
  });

  it("the window slides: once the oldest failures are 15 minutes old, sign-in works again", async () => {
    const { user, password } = await createTestUser(testDatabase.db, "viewer");
    const old = new Date(Date.now() - LOGIN_FAILURE_WINDOW_MS - 1000);
    await testDatabase.db.insert(loginFailures).values(
      Array.from({ length: MAX_LOGIN_FAILURES }, () => ({
        nameKey: user.name.toLowerCase(),
        address,
        at: old,
      })),
    );
    const session = await signIn(testDatabase.db, { name: user.name, password, address });
    expect(session.user.id).toBe(user.id);
    // A success clears the pair's failures.
    const left = await testDatabase.db
      .select()
      .from(loginFailures)
      .where(eq(loginFailures.nameKey, user.name.toLowerCase()));
    expect(left).toEqual([]);
  });

  it("an unknown name gets the same answer as a wrong password, after the same Argon2 work", async () => {
    const { user } = await createTestUser(testDatabase.db, "viewer");
    const [stored] = await testDatabase.db.select().from(users).where(eq(users.id, user.id));
    const attempt = async (name: string) => {
      vi.mocked(verify).mockClear();
      const error = await refusal(
        signIn(testDatabase.db, { name, password: "nope", address: "192.0.2.20" }),
      );
      const hashes = vi.mocked(verify).mock.calls.map(([hash]) => String(hash));
      return { hashes, message: error.message };
    };
    const known = await attempt(user.name);
    const unknown = await attempt("nobody-by-this-name");
    expect(unknown.message).toBe(known.message);
    // Each pays for exactly one Argon2id verification at the same cost (the time an attacker
    // could tell them apart by; bench:sign-in measures it): the user's hash, or a dummy one.
    expect(known.hashes).toEqual([stored!.passwordHash]);
    expect(unknown.hashes).toHaveLength(1);
    expect(unknown.hashes[0]).not.toBe(stored!.passwordHash);
    expect(argon2Work(unknown.hashes[0]!)).toBe(argon2Work(stored!.passwordHash));
    expect(argon2Work(stored!.passwordHash)).toMatch(/^argon2id\$v=19\$m=\d+,t=\d+,p=\d+$/);
  });

  it("a disabled account cannot sign in", async () => {
    const { user, password } = await createTestUser(testDatabase.db, "viewer");
    await setUserDisabled(testDatabase.db, user.id, true);
    const error = await refusal(signIn(testDatabase.db, { name: user.name, password, address }));
    expect(error.message).toContain("disabled");
  });
});

describe("API tokens", () => {
  it("stored as a hash with a visible prefix; revoked tokens and disabled owners stop working", async () => {
    const { user } = await createTestUser(testDatabase.db, "operator");
    const created = await createApiToken(testDatabase.db, user.id, "backup script");
    expect(created.token).toMatch(/^clp_[A-Za-z0-9_-]{43}$/);
    expect(created.prefix).toBe(created.token.slice(0, 12));
    const [row] = await testDatabase.db
      .select()
      .from(apiTokens)
      .where(eq(apiTokens.id, created.id));
    expect(row!.tokenHash).toBe(sha256Hex(created.token));
    expect(JSON.stringify(row)).not.toContain(created.token);

    expect((await validateApiToken(testDatabase.db, created.token))?.role).toBe("operator");
    const [used] = await testDatabase.db
      .select()
      .from(apiTokens)
      .where(eq(apiTokens.id, created.id));
    expect(used!.lastUsedAt).not.toBeNull();
    expect(await validateApiToken(testDatabase.db, `${created.token}x`)).toBeNull();

    await revokeApiToken(testDatabase.db, created.id, user.id);
    expect(await validateApiToken(testDatabase.db, created.token)).toBeNull();

    const second = await createApiToken(testDatabase.db, user.id, "other");
    await testDatabase.db.update(users).set({ disabled: true }).where(eq(users.id, user.id));
    expect(await validateApiToken(testDatabase.db, second.token)).toBeNull();
  });

  it("a user cannot revoke someone else's token (an admin, revoking as null owner, can)", async () => {
    const alice = await createTestUser(testDatabase.db, "operator");
    const bob = await createTestUser(testDatabase.db, "operator");
    const token = await createApiToken(testDatabase.db, alice.user.id, "alice's");
    expect((await refusal(revokeApiToken(testDatabase.db, token.id, bob.user.id))).code).toBe(
      "not_found",
    );
    expect(await validateApiToken(testDatabase.db, token.token)).not.toBeNull();
    await revokeApiToken(testDatabase.db, token.id, null);
    expect(await validateApiToken(testDatabase.db, token.token)).toBeNull();
  });
});

describe("users", () => {
  it("names are unique case-insensitively", async () => {
    await createUser(testDatabase.db, {
      name: "Carol",
      role: "viewer",
      password: "long enough pw",
    });
    const error = await refusal(
      createUser(testDatabase.db, { name: "carol", role: "viewer", password: "long enough pw" }),
    );
    expect(error.code).toBe("conflict");
    expect(error.fieldErrors?.name).toBeDefined();
  });

  it("the last enabled admin cannot be demoted or disabled, even by two admins at once", async () => {
    // Leave exactly two enabled admins in this database.
    await testDatabase.db.update(users).set({ disabled: true }).where(eq(users.role, "admin"));
    const a = await createTestUser(testDatabase.db, "admin");
    const b = await createTestUser(testDatabase.db, "admin");
    const results = await Promise.allSettled([
      changeUserRole(testDatabase.db, a.user.id, "operator"),
      changeUserRole(testDatabase.db, b.user.id, "operator"),
    ]);
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    const [{ n }] = (await testDatabase.db
      .select({ n: sql<number>`count(*)::int` })
      .from(users)
      .where(sql`role = 'admin' and not disabled`)) as [{ n: number }];
    expect(n).toBe(1);
    const last = results[0]!.status === "fulfilled" ? b : a;
    expect((await refusal(setUserDisabled(testDatabase.db, last.user.id, true))).message).toContain(
      "last enabled admin",
    );
  });
});
