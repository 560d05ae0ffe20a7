import http from "node:http";
import type { AddressInfo } from "node:net";

import { afterEach, describe, expect, it } from "vitest";

import { parseTrustedProxies, type TrustedProxies } from "./forwarded-headers";
import { prepareIncomingRequest } from "./incoming-request";

let server: http.Server | null = null;

afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = null;
});

/** A real HTTP server on loopback that prepares each request and echoes the headers it then has. */
async function echoServer(trusted: TrustedProxies): Promise<string> {
  server = http.createServer((request, response) => {
    prepareIncomingRequest(request, response, trusted);
    response.setHeader("content-type", "application/json");
    response.end(JSON.stringify(request.headers));
  });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server!.address() as AddressInfo).port}/`;
}

async function ask(url: string, headers: Record<string, string>) {
  const response = await fetch(url, { headers });
  return {
    seen: (await response.json()) as Record<string, string>,
    hsts: response.headers.get("strict-transport-security"),
  };
}

describe("prepareIncomingRequest over real HTTP", () => {
  it("a client talking to the console directly cannot claim HTTPS or another address", async () => {
    const url = await echoServer(parseTrustedProxies(undefined));
    const { seen, hsts } = await ask(url, {
      "x-forwarded-proto": "https",
      "x-forwarded-for": "198.51.100.7",
      "x-forwarded-host": "evil.example",
      "x-real-ip": "198.51.100.8",
    });
    expect(hsts).toBeNull();
    expect(seen["x-forwarded-for"]).toBe("127.0.0.1");
    expect(seen["x-forwarded-proto"]).toBeUndefined();
    expect(seen["x-forwarded-host"]).toBeUndefined();
    expect(seen["x-real-ip"]).toBeUndefined();
  });

  it("behind a trusted TLS proxy the answer pins HTTPS and the proxy's client address counts", async () => {
    const url = await echoServer(parseTrustedProxies("127.0.0.1"));
    const { seen, hsts } = await ask(url, {
      "x-forwarded-proto": "https",
      "x-forwarded-for": "203.0.113.9",
      "x-forwarded-host": "console.example",
    });
    expect(hsts).toBe("max-age=31536000");
    expect(seen["x-forwarded-for"]).toBe("203.0.113.9");
    expect(seen["x-forwarded-host"]).toBe("console.example");

    const plain = await ask(url, { "x-forwarded-proto": "http" });
    expect(plain.hsts).toBeNull();
  });
});
