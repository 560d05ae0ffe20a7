/**
 * Stand-in for `next/headers` when a test calls a server action directly (outside a Next.js
 * request there is no cookie store). Use in a test file:
 *
 *   vi.mock("next/headers", () => import("@/test/next-headers"));
 *   vi.mock("next/cache", () => ({ revalidatePath: () => undefined }));
 *   actAs(admin);        // or actAs(null) for nobody signed in
 *
 * The action then runs the real session check against the real database.
 */
import { SESSION_COOKIE } from "@/lib/auth/session-cookie";

const jar = new Map<string, string>();
const requestHeaders = new Map<string, string>();

/** Signs the next action calls in as this user's session (or as nobody). */
export function actAs(user: { sessionToken: string } | null): void {
  jar.clear();
  if (user) jar.set(SESSION_COOKIE, user.sessionToken);
}

export function setRequestHeader(name: string, value: string | null): void {
  if (value === null) requestHeaders.delete(name.toLowerCase());
  else requestHeaders.set(name.toLowerCase(), value);
}

export function cookieValue(name: string): string | undefined {
  return jar.get(name);
}

export async function cookies() {
  return {
    get: (name: string) => (jar.has(name) ? { name, value: jar.get(name)! } : undefined),
    set: (name: string, value: string) => {
      jar.set(name, value);
    },
    delete: (name: string) => {
      jar.delete(name);
    },
  };
}

export async function headers() {
  return new Headers([...requestHeaders.entries()]);
}
