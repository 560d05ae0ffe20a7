import type { Metadata } from "next";
import { connection } from "next/server";
import type { ReactNode } from "react";
import { Providers } from "@/components/providers";
import "./globals.css";

export const metadata: Metadata = {
  title: { default: "CluPilot", template: "%s · CluPilot" },
  description: "Onboard Proxmox hosts from a fresh Debian install to active, and watch it live.",
};

/**
 * This request's render time, for the relative times the page shows (components/use-now.ts): a
 * server component renders once per request, so reading the clock here is what is wanted.
 */
function renderTime(): number {
  return Date.now();
}

export default async function RootLayout({ children }: { children: ReactNode }) {
  // Every page renders per request, so Next.js can put this request's CSP nonce (proxy.ts) on
  // its scripts; a prerendered page would carry none and its scripts would be blocked.
  await connection();
  const renderedAt = renderTime();
  return (
    <html lang="en">
      <body>
        <Providers renderedAt={renderedAt}>{children}</Providers>
      </body>
    </html>
  );
}
