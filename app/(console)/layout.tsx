import Link from "next/link";
import type { ReactNode } from "react";
import { ActorProvider } from "@/components/actor-context";
import { CrashLoopBanner } from "@/components/crash-loop-banner";
import { PowerModeBanner } from "@/components/power/power-mode-banner";
import { LiveIndicator, LiveProvider } from "@/components/live-provider";
import { UserMenu } from "@/components/user-menu";
import { requirePageActor } from "@/lib/auth/actor";
import { hasRole } from "@/lib/roles";
import { AUDIT_READER_ROLE } from "@/lib/audit/access";
import { getDb } from "@/lib/db/client";
import { readPowerMode } from "@/lib/power/queries/power-settings";

// Every console page needs a signed-in user. Each page checks its own role as well: a layout
// is not re-rendered on every navigation, and server actions never pass through it.
export default async function ConsoleLayout({ children }: { children: ReactNode }) {
  const actor = await requirePageActor("viewer");
  const powerMode = await readPowerMode(getDb());
  return (
    <ActorProvider actor={actor}>
      <LiveProvider>
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
              <li>
                <Link href="/power">Power</Link>
              </li>
              <li>
                <Link href="/settings/ssh-key">SSH key</Link>
              </li>
              {hasRole(actor.role, AUDIT_READER_ROLE) && (
                <li>
                  <Link href="/audit">Audit</Link>
                </li>
              )}
              {hasRole(actor.role, "admin") && (
                <li>
                  <Link href="/users">Users</Link>
                </li>
              )}
            </ul>
          </nav>
          <LiveIndicator />
          <UserMenu actor={actor} />
        </header>
        <main id="main" className="main">
          <CrashLoopBanner />
          <PowerModeBanner initialMode={powerMode} />
          {children}
        </main>
      </LiveProvider>
    </ActorProvider>
  );
}
