import type { Metadata } from "next";
import Link from "next/link";
import { NotificationTargetCards } from "@/components/notify/target-cards";
import { NotificationTargetForm } from "@/components/notify/target-form";
import { requirePageActor } from "@/lib/auth/actor";
import { hasRole } from "@/lib/roles";
import { getDb } from "@/lib/db/client";
import { targetCards } from "@/lib/notify/deliveries";

export const dynamic = "force-dynamic";

export const metadata: Metadata = { title: "Notifications" };

type SearchParams = Promise<Record<string, string | string[] | undefined>>;

/**
 * Where power and onboarding events are sent: every target's card with its last delivery and
 * its failing ones. Everyone reads; operators acknowledge failures; admins add, test and edit
 * one (`?edit=<id>`: a query, not a `[id]` page, so the page crawls need no id for it).
 */
export default async function NotificationsPage({ searchParams }: { searchParams: SearchParams }) {
  const actor = await requirePageActor("viewer", "/power/notifications");
  const isAdmin = hasRole(actor.role, "admin");
  const cards = await targetCards(getDb());
  const editId = (await searchParams).edit;
  const editing = isAdmin ? (cards.find((c) => c.target.id === editId)?.target ?? null) : null;
  return (
    <>
      <div className="page-head">
        <h1>Notifications</h1>
        {isAdmin && (
          <Link href="/power/notifications/new" className="button" data-testid="notify-add">
            Add target
          </Link>
        )}
      </div>
      <p className="lead">
        Each event — power (on battery, low battery, mains back, triggers, shutdown calls, the
        self-test) and onboarding (a host active, a failed step, templates) — goes to every enabled
        target that wants its severity and kind, through the worker, retried with backoff. A
        delivery that keeps failing stays red here and on the power dashboard until it gets through
        or is acknowledged.
      </p>
      {editing && (
        <section data-testid="notify-edit">
          <h2>Edit {editing.name}</h2>
          <NotificationTargetForm key={editing.id} target={editing} />
        </section>
      )}
      <NotificationTargetCards initial={cards} />
    </>
  );
}
