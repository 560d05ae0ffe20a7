import { sql } from "drizzle-orm";
import { describe, expect, it, vi } from "vitest";
import { issueSetupToken } from "@/lib/auth/setup";
import { createSession, listUserSessions, validateSessionToken } from "@/lib/auth/session";
import { SESSION_COOKIE } from "@/lib/auth/session-cookie";
import { getDb } from "@/lib/db/client";
import { createTestUser } from "@/test/auth";
import { registerProcessTestDatabase } from "@/test/process-database";
import { actAs, cookieValue, setRequestHeader } from "@/test/next-headers";
import { completeSetupAction } from "./complete-setup";
import { signInAction } from "./sign-in";
import { signOutAction } from "./sign-out";
import { signOutOtherSessionsAction } from "./sign-out-other-sessions";

vi.mock("next/headers", () => import("@/test/next-headers"));
vi.mock("next/cache", () => ({ revalidatePath: () => undefined }));

registerProcessTestDatabase();

/** redirect() throws; its digest carries the target. */
async function redirectOf(promise: Promise<unknown>): Promise<string> {
  const error = (await promise.then(
    () => null,
    (e: unknown) => e,
  )) as { digest?: string } | null;
  const match = /^NEXT_REDIRECT;[^;]*;([^;]+);/.exec(error?.digest ?? "");
  if (!match) throw new Error(`expected a redirect, got ${String(error)}`);
  return match[1]!;
}

const auditRows = (action: string) =>
  getDb().execute<{ actor_name: string; outcome: string; target: string }>(
    sql`select actor_name, outcome, target from audit_log where action = ${action} order by id`,
  );

describe("setup, sign-in and sign-out actions", () => {
  it("setup creates the admin, sets the session cookie and goes to /hosts; then it is closed", async () => {
    const token = (await issueSetupToken(getDb()))!;
    actAs(null);
    const wrong = await completeSetupAction(null, {
      setupToken: "nope",
      name: "root",
      password: "a long enough password",
    });
    expect(wrong).toMatchObject({ ok: false, fieldErrors: { setupToken: expect.any(Array) } });
    const target = await redirectOf(
      completeSetupAction(null, {
        setupToken: token,
        name: "root",
        password: "a long enough password",
      }),
    );
    expect(target).toBe("/hosts");
    const session = await validateSessionToken(getDb(), cookieValue(SESSION_COOKIE)!);
    expect(session?.user).toMatchObject({ name: "root", role: "admin" });
    expect(
      await completeSetupAction(null, {
        setupToken: token,
        name: "x",
        password: "a long enough password",
      }),
    ).toMatchObject({ ok: false });
    expect((await auditRows("auth.setup")).rows.map((r) => r.outcome)).toEqual([
      "failure",
      "success",
      "failure",
    ]);
  });

  it("sign-in sets a working session cookie and returns to a same-site next; failures are audited", async () => {
    const { user, password } = await createTestUser(getDb(), "operator");
    setRequestHeader("x-forwarded-for", "192.0.2.50");
    setRequestHeader("user-agent", "Mozilla/5.0 (X11; Linux x86_64) Firefox/145.0");
    actAs(null);
    const wrong = await signInAction(null, { name: user.name, password: "wrong" });
    expect(wrong).toMatchObject({ ok: false, message: expect.stringContaining("do not match") });
    expect(cookieValue(SESSION_COOKIE)).toBeUndefined();

    const target = await redirectOf(
      signInAction(null, { name: user.name, password, next: "//evil.example/" }),
    );
    expect(target).toBe("/hosts");
    expect((await validateSessionToken(getDb(), cookieValue(SESSION_COOKIE)!))?.user.id).toBe(
      user.id,
    );
    const rows = (await auditRows("auth.sign_in")).rows.filter(
      (r) => r.target === `user:${user.name}`,
    );
    expect(rows.map((r) => r.outcome)).toEqual(["failure", "success"]);
    // The session remembers where it came from, for its owner's list.
    const [session] = await listUserSessions(getDb(), user.id, cookieValue(SESSION_COOKIE));
    expect(session).toMatchObject({
      current: true,
      address: "192.0.2.50",
      userAgent: "Mozilla/5.0 (X11; Linux x86_64) Firefox/145.0",
    });
  });

  it("the sixth wrong password from one address is answered 429-style and audited as denied", async () => {
    const { user } = await createTestUser(getDb(), "viewer");
    setRequestHeader("x-forwarded-for", "192.0.2.51");
    for (let i = 0; i < 5; i++) await signInAction(null, { name: user.name, password: "wrong" });
    const limited = await signInAction(null, { name: user.name, password: "wrong" });
    expect(limited).toMatchObject({
      ok: false,
      message: expect.stringMatching(/Try again in \d+ minutes?/),
    });
    const rows = (await auditRows("auth.sign_in")).rows.filter(
      (r) => r.target === `user:${user.name}`,
    );
    expect(rows.at(-1)!.outcome).toBe("denied");
  });

  it("sign-out deletes the session (not only the cookie) and is audited", async () => {
    const signedIn = await createTestUser(getDb(), "viewer");
    actAs(signedIn);
    expect(await redirectOf(signOutAction())).toBe("/login");
    expect(cookieValue(SESSION_COOKIE)).toBeUndefined();
    expect(await validateSessionToken(getDb(), signedIn.sessionToken)).toBeNull();
    const rows = (await auditRows("auth.sign_out")).rows;
    expect(rows).toContainEqual({
      actor_name: signedIn.user.name,
      outcome: "success",
      target: `user:${signedIn.user.name}`,
    });
  });

  it("sign out everywhere else ends the user's other sessions only, lists what is left, and is audited", async () => {
    const signedIn = await createTestUser(getDb(), "operator");
    const { token: laptop } = await createSession(getDb(), signedIn.user.id);
    const { token: phone } = await createSession(getDb(), signedIn.user.id);
    const someoneElse = await createTestUser(getDb(), "viewer");
    const listed = await listUserSessions(getDb(), signedIn.user.id, signedIn.sessionToken);
    expect(listed).toHaveLength(3);
    expect(listed.filter((session) => session.current)).toHaveLength(1);

    actAs(signedIn);
    expect(await signOutOtherSessionsAction()).toEqual({ ok: true, ended: 2 });
    expect(await validateSessionToken(getDb(), laptop)).toBeNull();
    expect(await validateSessionToken(getDb(), phone)).toBeNull();
    expect(await validateSessionToken(getDb(), signedIn.sessionToken)).not.toBeNull();
    expect(await validateSessionToken(getDb(), someoneElse.sessionToken)).not.toBeNull();
    expect(await listUserSessions(getDb(), signedIn.user.id, signedIn.sessionToken)).toEqual([
      expect.objectContaining({ current: true }),
    ]);
    const rows = await getDb().execute<{ outcome: string; detail: unknown }>(
      sql`select outcome, detail from audit_log where action = 'auth.sign_out_others'
          and actor_name = ${signedIn.user.name}`,
    );
    expect(rows.rows).toEqual([{ outcome: "success", detail: { ended: 2 } }]);

    actAs(null);
    expect(await signOutOtherSessionsAction()).toMatchObject({
      ok: false,
      message: expect.stringMatching(/sign in/i),
    });
  });
});
