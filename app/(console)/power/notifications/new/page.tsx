import type { Metadata } from "next";
import Link from "next/link";
import { NotificationTargetForm } from "@/components/notify/target-form";
import { requirePageActor } from "@/lib/auth/actor";

export const dynamic = "force-dynamic";

export const metadata: Metadata = { title: "Add notification target" };

export default async function NewNotificationTargetPage() {
  await requirePageActor("admin", "/power/notifications/new");
  return (
    <>
      <p>
        <Link href="/power/notifications">← Notifications</Link>
      </p>
      <h1>Add notification target</h1>
      <NotificationTargetForm />
    </>
  );
}
