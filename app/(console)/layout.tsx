import Link from "next/link";
import type { ReactNode } from "react";
import { LiveIndicator } from "@/components/live-provider";

export default function ConsoleLayout({ children }: { children: ReactNode }) {
  return (
    <>
      <a href="#main" className="skip-link">
        Skip to content
      </a>
      <header className="site-header">
        <Link href="/hosts" className="brand">
          CluPilot
        </Link>
        <nav aria-label="Main">
          <ul>
            <li>
              <Link href="/hosts">Hosts</Link>
            </li>
            <li>
              <Link href="/catalog">Catalog</Link>
            </li>
          </ul>
        </nav>
        <LiveIndicator />
      </header>
      <main id="main" className="main">
        {children}
      </main>
    </>
  );
}
