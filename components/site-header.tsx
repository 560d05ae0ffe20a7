"use client";

import Link from "next/link";
import { usePathname } from "next/navigation";
import { useEffect, useState, type ReactNode } from "react";
import { LiveIndicator } from "./live-provider";

export type NavItem = { href: string; label: string };

/** Whether `pathname` is in the section `href` heads (`/power/ups` is in Power). */
export function inSection(pathname: string, href: string): boolean {
  return pathname === href || pathname.startsWith(`${href}/`);
}

/**
 * The console's header. Wide screens show everything on one line; on a phone the navigation and
 * the account sit behind a Menu button (every link one tap away, nothing off screen), the live
 * indicator stays in sight. The menu closes when a link was followed.
 */
export function SiteHeader({ items, account }: { items: NavItem[]; account: ReactNode }) {
  const pathname = usePathname();
  const [open, setOpen] = useState(false);
  const [shownFor, setShownFor] = useState(pathname);
  // A navigation closes the menu (state adjusted while rendering, not in an effect).
  if (shownFor !== pathname) {
    setShownFor(pathname);
    setOpen(false);
  }
  useEffect(() => {
    if (!open) return;
    const onKey = (event: KeyboardEvent) => {
      if (event.key === "Escape") setOpen(false);
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [open]);
  return (
    <header className="site-header" data-menu={open ? "open" : "closed"}>
      <Link href="/hosts" className="brand">
        CluPilot
      </Link>
      <LiveIndicator />
      <button
        type="button"
        className="button nav-toggle"
        aria-expanded={open}
        aria-controls="site-menu"
        onClick={() => setOpen((value) => !value)}
        data-testid="nav-toggle"
      >
        <span aria-hidden="true">{open ? "✕" : "☰"}</span> Menu
      </button>
      <div id="site-menu" className="site-menu" data-testid="site-menu">
        <nav aria-label="Main">
          <ul>
            {items.map((item) => (
              <li key={item.href}>
                <Link
                  href={item.href}
                  aria-current={inSection(pathname, item.href) ? "page" : undefined}
                >
                  {item.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        {account}
      </div>
    </header>
  );
}
