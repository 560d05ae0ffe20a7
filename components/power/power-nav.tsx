"use client";

import Link from "next/link";
import { usePathname } from "next/navigation";

export type PowerNavItem = { href: string; label: string };

/** The power pages, in the README's names and order; admins' configuration pages for admins. */
export function powerNavItems(isAdmin: boolean): PowerNavItem[] {
  return [
    { href: "/power", label: "Overview" },
    ...(isAdmin
      ? [
          { href: "/power/ups", label: "UPS devices" },
          { href: "/power/targets", label: "Targets" },
        ]
      : []),
    { href: "/power/clusters", label: "Clusters" },
    ...(isAdmin ? [{ href: "/power/settings", label: "Triggers and deadlines" }] : []),
    { href: "/power/notifications", label: "Notifications" },
    { href: "/power/runs", label: "Runs and drills" },
  ];
}

/** Which item a path belongs to: the overview only itself, the others their sub-pages too. */
export function currentPowerItem(pathname: string, items: readonly PowerNavItem[]): string | null {
  const match = items
    .filter((i) =>
      i.href === "/power"
        ? pathname === "/power"
        : pathname === i.href || pathname.startsWith(`${i.href}/`),
    )
    .sort((a, b) => b.href.length - a.href.length)[0];
  return match?.href ?? null;
}

/**
 * One navigation for every power page, the same everywhere (app/(console)/power/layout.tsx):
 * the page one is on is marked, and on a phone the links wrap instead of running off screen.
 */
export function PowerNav({ isAdmin }: { isAdmin: boolean }) {
  const pathname = usePathname();
  const items = powerNavItems(isAdmin);
  const current = currentPowerItem(pathname, items);
  return (
    <nav className="sub-nav" aria-label="Power" data-testid="power-nav">
      <ul>
        {items.map((item) => (
          <li key={item.href}>
            <Link href={item.href} aria-current={item.href === current ? "page" : undefined}>
              {item.label}
            </Link>
          </li>
        ))}
      </ul>
    </nav>
  );
}
