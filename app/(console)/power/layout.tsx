import type { ReactNode } from "react";
import { PowerNav } from "@/components/power/power-nav";
import { requirePageActor } from "@/lib/auth/actor";
import { hasRole } from "@/lib/roles";

/** Every power page: one navigation on top, the same on each (each page checks its own role). */
export default async function PowerLayout({ children }: { children: ReactNode }) {
  const actor = await requirePageActor("viewer");
  return (
    <>
      <PowerNav isAdmin={hasRole(actor.role, "admin")} />
      {children}
    </>
  );
}
