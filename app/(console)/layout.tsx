import type { ReactNode } from "react";
import { ActorProvider } from "@/components/actor-context";
import { CrashLoopBanner } from "@/components/crash-loop-banner";
import { PowerModeBanner } from "@/components/power/power-mode-banner";
import { LiveProvider } from "@/components/live-provider";
import { SiteHeader, type NavItem } from "@/components/site-header";
import { UserMenu } from "@/components/user-menu";
import { requirePageActor } from "@/lib/auth/actor";
import { hasRole, type Role } from "@/lib/roles";
import { AUDIT_READER_ROLE } from "@/lib/audit/access";
import { getDb } from "@/lib/db/client";
import { readPowerMode } from "@/lib/power/queries/power-settings";

/** The header's links: every page of the console is under one of these, by role. */
function navItems(role: Role): NavItem[] {
  return [
    { href: "/hosts", label: "Hosts" },
    { href: "/catalog", label: "Catalog" },
    { href: "/power", label: "Power" },
    { href: "/settings/ssh-key", label: "SSH key" },
    ...(hasRole(role, AUDIT_READER_ROLE) ? [{ href: "/audit", label: "Audit" }] : []),
    ...(hasRole(role, "admin") ? [{ href: "/users", label: "Users" }] : []),
  ];
}

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
        <SiteHeader items={navItems(actor.role)} account={<UserMenu actor={actor} />} />
        <main id="main" className="main">
          <CrashLoopBanner />
          <PowerModeBanner initialMode={powerMode} />
          {children}
        </main>
      </LiveProvider>
    </ActorProvider>
  );
}
