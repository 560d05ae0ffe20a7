import { describe, expect, it } from "vitest";
import {
  parseTrustedProxies,
  resolveClientAddress,
  rewriteForwardedHeaders,
} from "./forwarded-headers";

const none = parseTrustedProxies(undefined);
const proxy = parseTrustedProxies("10.0.0.5, 192.168.10.0/24, ::1");

describe("the client address behind X-Forwarded-For", () => {
  it("is the TCP peer when no proxy is trusted, whatever the client claims", () => {
    expect(resolveClientAddress("203.0.113.9", undefined, none)).toBe("203.0.113.9");
    expect(resolveClientAddress("203.0.113.9", "198.51.100.77", none)).toBe("203.0.113.9");
    expect(resolveClientAddress("::ffff:127.0.0.1", "1.2.3.4, 5.6.7.8", none)).toBe("127.0.0.1");
  });

  it("is the entry a trusted proxy appended, and only that one", () => {
    // The client sent "1.1.1.1" itself; the proxy appended the peer it saw.
    expect(resolveClientAddress("10.0.0.5", "1.1.1.1, 203.0.113.9", proxy)).toBe("203.0.113.9");
    // A chain of trusted proxies is walked back to the first untrusted address.
    expect(resolveClientAddress("::1", ["1.1.1.1, 203.0.113.9", "192.168.10.7"], proxy)).toBe(
      "203.0.113.9",
    );
    // A trusted proxy that forwarded nothing: the proxy is all we know.
    expect(resolveClientAddress("10.0.0.5", undefined, proxy)).toBe("10.0.0.5");
    // A peer outside the list is the client even if it sends a header.
    expect(resolveClientAddress("10.0.0.6", "203.0.113.9", proxy)).toBe("10.0.0.6");
  });

  it("rewrites the headers Next.js reads: one address, no client-chosen proto/host/port", () => {
    const direct: Record<string, string | string[] | undefined> = {
      "x-forwarded-for": "198.51.100.1",
      "x-real-ip": "198.51.100.2",
      forwarded: "for=198.51.100.3",
      "x-forwarded-proto": "https",
      "x-forwarded-host": "evil.example",
      "x-forwarded-port": "443",
      host: "console:3000",
    };
    rewriteForwardedHeaders(direct, "203.0.113.9", proxy);
    expect(direct).toEqual({ "x-forwarded-for": "203.0.113.9", host: "console:3000" });

    const proxied: Record<string, string | string[] | undefined> = {
      "x-forwarded-for": "203.0.113.9",
      "x-forwarded-proto": "https",
      "x-forwarded-host": "console.example",
    };
    rewriteForwardedHeaders(proxied, "::ffff:10.0.0.5", proxy);
    expect(proxied).toEqual({
      "x-forwarded-for": "203.0.113.9",
      "x-forwarded-proto": "https",
      "x-forwarded-host": "console.example",
    });
  });

  it("refuses a setting that is not a list of addresses or ranges, saying what to write", () => {
    for (const bad of ["proxy.example", "10.0.0.0/33", "10.0.0.1/8/2", "::1/129"]) {
      expect(() => parseTrustedProxies(bad)).toThrow(
        /CLUPILOT_TRUSTED_PROXIES: .* comma-separated/,
      );
    }
    expect(parseTrustedProxies(" , ").described).toBe("none");
  });
});
