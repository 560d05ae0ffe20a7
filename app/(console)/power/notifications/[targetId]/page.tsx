import type { Metadata } from "next";
import Link from "next/link";
import { notFound } from "next/navigation";
import { z } from "zod";
import { NotificationTargetForm } from "@/components/notify/target-form";
import { requirePageActor } from "@/lib/auth/actor";
import { getDb } from "@/lib/db/client";
import { listTargets } from "@/lib/notify/targets";

export const dynamic = "force-dynamic";

export const metadata: Metadata = { title: "Edit notification target" };

export default async function EditNotificationTargetPage({
  params,
}: {
  params: Promise<{ targetId: string }>;
}) {
  const { targetId } = await params;
  await requirePageActor("admin", `/power/notifications/${targetId}`);
  if (!z.uuid().safeParse(targetId).success) notFound();
  const target = (await listTargets(getDb())).find((t) => t.id === targetId);
  if (!target) notFound();
  return (
    <>
      <p>
        <Link href="/power/notifications">← Notifications</Link>
      </p>
      <h1>Edit {target.name}</h1>
      <NotificationTargetForm target={target} />
    </>
  );
}
