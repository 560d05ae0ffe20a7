import { describe, expect, it } from "vitest";
import { safeNextPath } from "./request-context";
import { cameOverHttps, clientAddress, sessionCookieOptions } from "./session-cookie";

describe("session cookie", () => {
  it("is httpOnly and SameSite=Lax, Secure only when the browser came over HTTPS", () => {
    const expires = new Date();
    expect(sessionCookieOptions(false, expires)).toEqual({
      httpOnly: true,
      sameSite: "lax",
      secure: false,
      path: "/",
      expires,
    });
    expect(cameOverHttps("https://console.example/login", null)).toBe(true);
    expect(cameOverHttps("http://10.0.0.2:3000", null)).toBe(false);
    // A TLS-terminating proxy in front: its header decides, whatever the inner URL says.
    expect(cameOverHttps("http://127.0.0.1:3000", "https")).toBe(true);
    expect(cameOverHttps("http://127.0.0.1:3000", "https, http")).toBe(true);
    expect(cameOverHttps("https://x", "http")).toBe(false);
    expect(cameOverHttps(null, null)).toBe(false);
  });

  it("counts sign-ins per the address the web server resolved (the last X-Forwarded-For entry)", () => {
    expect(clientAddress("203.0.113.9")).toBe("203.0.113.9");
    expect(clientAddress("1.2.3.4, 203.0.113.9")).toBe("203.0.113.9");
    expect(clientAddress(null)).toBe("unknown");
  });

  it("goes back only to a path on this site after sign-in (no open redirect)", () => {
    expect(safeNextPath("/hosts/abc")).toBe("/hosts/abc");
    expect(safeNextPath("//evil.example/x")).toBe("/hosts");
    expect(safeNextPath("/\\evil.example")).toBe("/hosts");
    expect(safeNextPath("https://evil.example")).toBe("/hosts");
    expect(safeNextPath(undefined)).toBe("/hosts");
  });
});
