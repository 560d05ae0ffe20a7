import { NextResponse, type NextRequest } from "next/server";
import { REQUESTED_PATH_HEADER } from "@/lib/auth/requested-path";
import { createNonce, pageContentSecurityPolicy } from "@/lib/http/security-headers";

/**
 * A fresh nonce and Content-Security-Policy per page request. Next.js reads the policy from the
 * request headers while rendering and puts the nonce on its own scripts, so every page must be
 * rendered per request (they are: `dynamic = "force-dynamic"` and the session read make them so).
 * The fixed headers (nosniff, Referrer-Policy, …) come from next.config.ts.
 */
export function proxy(request: NextRequest) {
  const nonce = createNonce();
  const policy = pageContentSecurityPolicy(nonce, process.env.NODE_ENV === "development");
  const requestHeaders = new Headers(request.headers);
  requestHeaders.set("x-nonce", nonce);
  // For the console layout's redirect to /login?next=… (see lib/auth/actor.ts).
  requestHeaders.set(REQUESTED_PATH_HEADER, request.nextUrl.pathname + request.nextUrl.search);
  requestHeaders.set("Content-Security-Policy", policy);
  const response = NextResponse.next({ request: { headers: requestHeaders } });
  response.headers.set("Content-Security-Policy", policy);
  return response;
}

export const config = {
  matcher: [
    {
      // Pages only: API answers get their fixed policy from next.config.ts, and built assets
      // carry no markup. Prefetches render no HTML, so they need no nonce.
      source: "/((?!api|_next/static|_next/image|icon.svg|favicon.ico).*)",
      missing: [
        { type: "header", key: "next-router-prefetch" },
        { type: "header", key: "purpose", value: "prefetch" },
      ],
    },
  ],
};
