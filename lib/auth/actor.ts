import { cookies, headers } from "next/headers";
import { redirect } from "next/navigation";
import { NextRequest } from "next/server";
import { getDb } from "@/lib/db/client";
import { recordAudit } from "@/lib/audit/record-audit";
import { AppError, safeErrorSummary } from "@/lib/errors";
import { validateApiToken } from "./api-tokens";
import { REQUESTED_PATH_HEADER } from "./requested-path";
import { hasRole, type Role } from "@/lib/roles";
import { validateSessionToken, type SessionUser } from "./session";
import { SESSION_COOKIE } from "./session-cookie";

/** The signed-in user (or API token owner) an action or request runs as. */
export type Actor = { userId: string | null; name: string; role: Role };

const SIGN_IN = () =>
  new AppError("unauthenticated", "You are not signed in (or your session ended). Sign in again.");

/**
 * Checks the user against the role, and records a refusal for a too-low role in the audit log
 * (a viewer trying to abort is exactly what the log is for). A request without any user is not
 * recorded: there is no actor to name, and anonymous probes would flood the log.
 */
async function authorize(
  user: SessionUser | null,
  required: Role,
  where: () => Promise<string>,
): Promise<Actor> {
  if (!user) throw SIGN_IN();
  if (!hasRole(user.role, required)) {
    await recordRefusal(user, await where(), { required, role: user.role });
    throw new AppError(
      "forbidden",
      `This needs the ${required} role; ${user.name} is a ${user.role}. Ask an admin if you need it.`,
    );
  }
  return { userId: user.id, name: user.name, role: user.role };
}

/** An `access.denied` row; a failure to write it is logged, the refusal stands regardless. */
async function recordRefusal(
  user: SessionUser,
  target: string,
  detail: Record<string, string>,
): Promise<void> {
  await recordAudit(getDb(), {
    actor: { userId: user.id, name: user.name },
    action: "access.denied",
    target,
    outcome: "denied",
    detail,
  }).catch((error: unknown) => {
    console.error(`recording a refused request failed: ${safeErrorSummary(error)}`);
  });
}

async function userFromSessionToken(
  token: string | undefined,
  touch = true,
): Promise<SessionUser | null> {
  if (!token) return null;
  return (await validateSessionToken(getDb(), token, new Date(), { touch }))?.user ?? null;
}

/**
 * Who is acting in a server action or a page, checked against the role it needs: throws
 * AppError "unauthenticated" (401) without a valid session, "forbidden" (403) when the role is
 * too low. Reads the session cookie through next/headers.
 */
export async function currentActor(required: Role): Promise<Actor> {
  const token = (await cookies()).get(SESSION_COOKIE)?.value;
  // Pages and server actions pass through proxy.ts, which names the page they came from.
  const where = async () => {
    const h = await headers();
    const page = h.get(REQUESTED_PATH_HEADER) ?? "(unknown page)";
    return h.has("next-action") ? `server action on ${page}` : `page ${page}`;
  };
  return authorize(await userFromSessionToken(token), required, where);
}

/**
 * The same check for a route handler, from the request itself: the session cookie, or an
 * `Authorization: Bearer <personal API token>` header (the token acts with its owner's role).
 * A bearer header that is present but wrong is refused even when a cookie is valid: automation
 * should learn its token is dead, not silently act as whoever's browser it runs in.
 */
export async function requestActor(request: Request, required: Role): Promise<Actor> {
  const credential = await requestUser(request, true);
  if (credential.kind === "bad-token") {
    throw new AppError(
      "unauthenticated",
      "The API token is not valid (unknown, revoked, or its owner is disabled). Create a new one on your account page.",
    );
  }
  if (credential.kind === "cookie" && credential.user && !sameOriginOrNotBrowser(request)) {
    // Someone's page tried to act with this user's cookie: that is for the audit log.
    await recordRefusal(credential.user, await requestTarget(request)(), {
      reason: "cross-site request",
      from: (
        request.headers.get("origin") ??
        request.headers.get("sec-fetch-site") ??
        "unknown"
      ).slice(0, 200),
    });
    throw new AppError(
      "forbidden",
      "This request came from another site's page and was refused: changes are made from the console's own pages, or with an API token.",
    );
  }
  return authorize(credential.user, required, requestTarget(request));
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * Cross-site request forgery guard for cookie-authenticated changes. SameSite=Lax already keeps
 * the cookie off other sites' POSTs, but not off a sibling subdomain's ("same site"), and the
 * bodiless POSTs (retry, abort, rotate) need no JSON to do harm. Browsers say where a request
 * came from (`Sec-Fetch-Site`, else `Origin`); a request carrying neither is not from a browser
 * page, so it cannot be forged by one. Bearer tokens are never sent by a browser on its own.
 */
function sameOriginOrNotBrowser(request: Request): boolean {
  if (SAFE_METHODS.has(request.method.toUpperCase())) return true;
  const fetchSite = request.headers.get("sec-fetch-site");
  if (fetchSite) return fetchSite === "same-origin" || fetchSite === "none";
  const origin = request.headers.get("origin");
  if (!origin) return true;
  const host = request.headers.get("x-forwarded-host") ?? request.headers.get("host");
  try {
    return new URL(origin).host === host;
  } catch {
    return false; // "null" (sandboxed frame, file:) or garbage: not this console's page
  }
}

/**
 * Whether the credential a request came with still holds the role: for a stream that stays open
 * long after `requestActor` let it in. Not activity (no `last seen`/`last used` update) and not
 * audited (the refusal was, or was not, recorded when the request arrived).
 */
export async function requestStillAllowed(request: Request, required: Role): Promise<boolean> {
  const credential = await requestUser(request, false);
  return credential.user !== null && hasRole(credential.user.role, required);
}

async function requestUser(
  request: Request,
  touch: boolean,
): Promise<{ kind: "token" | "cookie" | "bad-token"; user: SessionUser | null }> {
  const authorization = request.headers.get("authorization");
  if (authorization) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    const user = match ? await validateApiToken(getDb(), match[1]!, new Date(), { touch }) : null;
    return user ? { kind: "token", user } : { kind: "bad-token", user: null };
  }
  // Headers only: `new NextRequest(request)` would take over the body stream, and the handler
  // could no longer read its JSON ("Body is unusable") on cookie-authenticated requests.
  const token = new NextRequest(request.url, { headers: request.headers }).cookies.get(
    SESSION_COOKIE,
  )?.value;
  return { kind: "cookie", user: await userFromSessionToken(token, touch) };
}

const requestTarget = (request: Request) => async () =>
  `${request.method} ${new URL(request.url).pathname}`;

/**
 * For pages and layouts: the actor, or a redirect to the sign-in page (back to `path` after it)
 * when nobody is signed in, or to /forbidden when the role is too low. Pages redirect rather
 * than error: a person followed a link, and the sign-in form is what they need.
 */
export async function requirePageActor(required: Role, path?: string): Promise<Actor> {
  try {
    return await currentActor(required);
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    if (error.code === "forbidden") redirect(`/forbidden?need=${required}`);
    // Layouts do not know the page's path; proxy.ts passes it along (REQUESTED_PATH_HEADER).
    const next = path ?? (await headers()).get(REQUESTED_PATH_HEADER);
    redirect(next ? `/login?next=${encodeURIComponent(next)}` : "/login");
  }
}
