import { describe, expect, it } from "vitest";
import {
  createNonce,
  pageContentSecurityPolicy,
  strictTransportSecurity,
} from "./security-headers";

function directives(policy: string): Map<string, string[]> {
  return new Map(
    policy.split(";").map((part) => {
      const [name, ...values] = part.trim().split(/\s+/);
      return [name!, values];
    }),
  );
}

describe("the page Content-Security-Policy", () => {
  it("runs scripts only with this request's nonce, never inline or eval in production", () => {
    const policy = directives(pageContentSecurityPolicy("abc123==", false));
    expect(policy.get("script-src")).toEqual(["'self'", "'nonce-abc123=='", "'strict-dynamic'"]);
    expect(policy.get("style-src")).toEqual(["'self'", "'nonce-abc123=='"]);
    expect(policy.get("frame-ancestors")).toEqual(["'none'"]);
    expect(policy.get("object-src")).toEqual(["'none'"]);
    expect(policy.get("base-uri")).toEqual(["'self'"]);
    expect(policy.get("form-action")).toEqual(["'self'"]);
  });

  it("allows eval only in development (React's error overlay)", () => {
    expect(directives(pageContentSecurityPolicy("n", true)).get("script-src")).toContain(
      "'unsafe-eval'",
    );
  });

  it("makes a fresh 128-bit nonce each time", () => {
    const nonces = new Set(Array.from({ length: 100 }, createNonce));
    expect(nonces.size).toBe(100);
    expect(Buffer.from([...nonces][0]!, "base64")).toHaveLength(16);
  });
});

describe("Strict-Transport-Security", () => {
  it("is sent only when the (trusted) proxy says the request came over HTTPS", () => {
    expect(strictTransportSecurity("https")).toBe("max-age=31536000");
    expect(strictTransportSecurity("HTTPS")).toBe("max-age=31536000");
    expect(strictTransportSecurity(["https, http"])).toBe("max-age=31536000");
    expect(strictTransportSecurity("http")).toBeNull();
    expect(strictTransportSecurity("http, https")).toBeNull();
    expect(strictTransportSecurity(undefined)).toBeNull();
    expect(strictTransportSecurity("")).toBeNull();
  });
});
